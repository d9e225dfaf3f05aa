package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/servebench/servebench/engine/pd"
)

// pdMetricsURLs asks a P/D router (engine/pd) for its instances and
// returns each one's /metrics URL, prefill instances first, so the run
// reads them as replicas; nil when base is not such a router.
func pdMetricsURLs(ctx context.Context, base string) []string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/pd/instances", nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var v struct {
		Instances []pd.Instance `json:"instances"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return nil
	}
	var urls []string
	for _, in := range v.Instances {
		urls = append(urls, in.URL+"/metrics")
	}
	return urls
}
