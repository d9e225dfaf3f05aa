package bench

import (
	"context"
	"slices"
	"strings"

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

// pdPasses returns the /metrics URLs a run against base reads and how many
// of their engines finish each request (0: one). When base is a P/D router
// (pdMetricsURLs) the URLs default to its instances, and each request is
// finished twice (a prefill and a decode instance) when the URLs are all of
// them, whether servebench started the router (--server pd) or not (a
// shard's --base-url, with or without the instances as --metrics-url):
// shards of one deployment must count as a run against it does.
func pdPasses(ctx context.Context, base string, given []string) ([]string, int) {
	inst := pdMetricsURLs(ctx, base)
	switch {
	case len(inst) == 0:
		return given, 0
	case len(given) == 0:
		return inst, 2
	case sameURLs(given, inst):
		return given, 2
	}
	return given, 0 // some of the instances: a request may be counted once or twice
}

// sameURLs reports whether a and b hold the same URLs (order and trailing
// slashes aside).
func sameURLs(a, b []string) bool {
	norm := func(us []string) []string {
		out := make([]string, len(us))
		for i, u := range us {
			out[i] = strings.TrimRight(u, "/")
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(norm(a), norm(b))
}
