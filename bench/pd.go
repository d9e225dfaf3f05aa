package bench

import (
	"context"
	"slices"
	"strings"

	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/engine/pd"
)

// pdMetricsURLs asks a P/D router (engine/pd) for its instances and
// returns each one's /metrics URL, prefill instances first, so the run
// reads them as replicas; nil when base is not such a router. An answer
// that is not a deployment's list (an instance URL that is no http://HOST,
// a role other than prefill or decode, or not both pools) is some other
// server's and is ignored: the run reads base's own /metrics, as it would
// without the request, and counts each request once.
func pdMetricsURLs(ctx context.Context, base string) []string {
	var v struct {
		Instances []pd.Instance `json:"instances"`
	}
	if !getJSON(ctx, base+"/pd/instances", &v) {
		return nil
	}
	var urls []string
	roles := map[string]bool{}
	for _, in := range v.Instances {
		if _, err := launch.ParseBaseURL(in.URL); err != nil || (in.Role != "prefill" && in.Role != "decode") {
			return nil
		}
		roles[in.Role] = true
		urls = append(urls, strings.TrimRight(in.URL, "/")+"/metrics")
	}
	if len(roles) != 2 {
		return nil
	}
	return urls
}

// pdPasses returns the /metrics URLs a run against base reads and how many
// of their engines finish each request (0: one). When base is a P/D router
// (pdMetricsURLs) the URLs default to its instances, and each request is
// finished twice (a prefill and a decode instance) when the URLs are all of
// them, whether servebench started the router (--server pd) or not (a
// shard's --base-url, with or without the instances as --metrics-url):
// shards of one deployment must count as a run against it does. ask false
// (a server servebench started from a preset that is no P/D router) skips
// the request.
func pdPasses(ctx context.Context, base string, given []string, ask bool) ([]string, int) {
	var inst []string
	if ask {
		inst = pdMetricsURLs(ctx, base)
	}
	switch {
	case len(inst) == 0:
		return given, 0
	case len(given) == 0:
		return inst, 2
	case SameURLs(given, inst):
		return given, 2
	}
	return given, 0 // some of the instances: a request may be counted once or twice
}

// SameURLs reports whether a and b hold the same URLs (order and trailing
// slashes aside): a run's --metrics-url against a router's instances, and
// merge's shards' server.metrics_urls.
func SameURLs(a, b []string) bool {
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
