package bench

import (
	"context"

	"github.com/servebench/servebench/engine/pd"
)

// pdMetricsURLs asks a P/D router (engine/pd) for its instances and
// returns each one's /metrics URL, prefill instances first, so the run
// reads them as replicas; nil when base is not such a router.
func pdMetricsURLs(ctx context.Context, base string) []string {
	var v struct {
		Instances []pd.Instance `json:"instances"`
	}
	if !getJSON(ctx, base+"/pd/instances", &v) {
		return nil
	}
	var urls []string
	for _, in := range v.Instances {
		urls = append(urls, in.URL+"/metrics")
	}
	return urls
}
