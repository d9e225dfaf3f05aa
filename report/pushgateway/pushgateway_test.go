package pushgateway

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/reporttest"
	"github.com/servebench/servebench/scrape/promql/promtest"
)

// Package is Debian's package of the Pushgateway the test runs.
const Package = "prometheus-pushgateway"

// startPushgateway runs Debian's Pushgateway on 127.0.0.1 and a free port
// until the test ends and returns its URL. Without the binary it fails the
// test when CI=true (CI installs it) and skips it elsewhere, naming the
// package.
func startPushgateway(t *testing.T) string {
	t.Helper()
	bin := promtest.Binary(t, Package, "prometheus-pushgateway", "pushgateway")
	addr := promtest.FreeAddr(t)
	d := promtest.Daemon(t, bin, "--web.listen-address="+addr, "--log.level=warn")
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-d.Exited:
			t.Fatalf("pushgateway exited before it was ready:\n%s", d.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pushgateway not ready after 30 s: %v\n%s", err, d.Log())
		}
	}
}

// scrapeGateway reads the Pushgateway's /metrics.
func scrapeGateway(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value finds the series of fam whose labels include want.
func value(fam *dto.MetricFamily, want map[string]string) (float64, bool) {
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}

func TestPushToRealPushgateway(t *testing.T) {
	base := startPushgateway(t)
	res, _ := reporttest.Seed()
	res.Runs[0].Errors = map[string]int{"timeout": 2}
	res.Runs[0].Goodput = &result.Goodput{SLO: "ttft=200ms", Attained: 15, Requests: 20, Attainment: 75, RatePerS: 0.2}
	opts := Options{URL: base, Job: "nightly", Labels: map[string]string{"gpu": "rtx3060"}}
	if err := Push(context.Background(), opts, res); err != nil {
		t.Fatal(err)
	}
	fams := scrapeGateway(t, base)
	st, ns := res.Runs[0], res.Runs[1]
	group := map[string]string{"job": "nightly", "gpu": "rtx3060"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range group {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		fam    string
		labels map[string]string
		want   float64
	}{
		{MetricClient, map[string]string{"run": "streaming", "stream": "true", "mode": "sequential", "quantity": "first_visible", "quantile": "0.5"}, st.Client.FirstVisibleS.Median},
		{MetricClient, map[string]string{"run": "streaming", "quantity": "e2e", "quantile": "0.99"}, st.Client.E2ES.P99},
		{MetricClient, map[string]string{"run": "non-streaming", "quantity": "e2e", "quantile": "0.9"}, ns.Client.E2ES.P90},
		{MetricEngineMean, map[string]string{"run": "streaming", "quantity": "ttft"}, st.Engine.TTFTS.Mean},
		{MetricEngineMean, map[string]string{"run": "non-streaming", "quantity": "e2e"}, ns.Engine.E2ES.Mean},
		{MetricErrors, map[string]string{"run": "streaming", "class": "timeout"}, 2},
		{MetricRequests, map[string]string{"run": "streaming"}, float64(st.Requests)},
		{MetricOK, map[string]string{"run": "non-streaming"}, float64(ns.OK)},
		{MetricOutputTPS, map[string]string{"run": "streaming"}, st.Throughput.OutputTokensPerS},
		{MetricGoodput, map[string]string{"run": "streaming", "slo": "ttft=200ms"}, 0.2},
		{MetricAttainment, map[string]string{"run": "streaming", "slo": "ttft=200ms"}, 0.75},
	} {
		got, ok := value(fams[c.fam], with(c.labels))
		if !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.fam, c.labels, got, ok, c.want)
		}
	}
	// A quantity the run does not have is absent, not 0.
	if _, ok := value(fams[MetricClient], with(map[string]string{"run": "non-streaming", "quantity": "itl"})); ok {
		t.Error("non-streaming run: an ITL series was pushed; want none")
	}

	// The next push replaces the group: the other run's series go.
	res.Runs = res.Runs[:1]
	if err := Push(context.Background(), opts, res); err != nil {
		t.Fatal(err)
	}
	if _, ok := value(scrapeGateway(t, base)[MetricRequests], with(map[string]string{"run": "non-streaming"})); ok {
		t.Error("after a push of one run, the group still holds the other run's series")
	}
}

func TestPushFailureIsAnError(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	res, _ := reporttest.Seed()
	err := Push(context.Background(), Options{URL: "http://" + addr, Timeout: 5 * time.Second}, res)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Errorf("push to a closed port: err = %v, want one naming %s", err, addr)
	}
}

func TestParseLabel(t *testing.T) {
	for _, c := range []struct {
		in, k, v string
		bad      bool
	}{
		{in: "gpu=h100", k: "gpu", v: "h100"},
		{in: "commit=abc=1", k: "commit", v: "abc=1"}, // the first = splits
		{in: "novalue", bad: true},
		{in: "1gpu=x", bad: true},   // not a label name
		{in: "job=x", bad: true},    // --push-job sets it
		{in: "run=x", bad: true},    // every series has it from the run
		{in: "__name=x", bad: true}, // reserved
	} {
		k, v, err := ParseLabel(c.in)
		if (err != nil) != c.bad || k != c.k || v != c.v {
			t.Errorf("ParseLabel(%q) = %q, %q, %v", c.in, k, v, err)
		}
	}
}
