// Package pushgateway pushes a result set's per-run summary to a
// Prometheus Pushgateway as gauges, so nightly benchmark figures land in
// the same Prometheus/Grafana as the servers they measure. It sits at the
// end of the pipeline, after bench has written results.json:
//
//	bench.Execute -> result.Results -> Push(ctx, Options, res)
//
// It uses client_golang's push package; nothing here touches the process.
package pushgateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// DefaultJob is the job label when Options.Job is empty.
const DefaultJob = "servebench"

// Options say where to push and under which grouping key.
type Options struct {
	URL     string            // the Pushgateway's base URL, e.g. http://pushgateway:9091
	Job     string            // "": DefaultJob
	Labels  map[string]string // grouping labels (--push-label k=v), added to every series
	Timeout time.Duration     // for the whole push; 0: 10 s
}

// ParseLabel parses a --push-label "k=v": k must be a valid Prometheus
// label name other than job (the job has its own flag) and not one of the
// labels each series carries already.
func ParseLabel(s string) (k, v string, err error) {
	k, v, ok := strings.Cut(s, "=")
	switch {
	case !ok || k == "":
		return "", "", result.OptionErrorf("Labels", s, "expected NAME=VALUE")
	case !model.LegacyValidation.IsValidLabelName(k) || strings.HasPrefix(k, "__"):
		return "", "", result.OptionErrorf("Labels", s, "%q is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", k)
	case k == "job":
		return "", "", result.OptionErrorf("Labels", s, "the job is set with {Job}")
	}
	for _, l := range runLabels {
		if k == l {
			return "", "", result.OptionErrorf("Labels", s, "%q is set on every series from the run", k)
		}
	}
	return k, v, nil
}

// CheckURL checks a --pushgateway URL before a run, so a typo is found
// before the benchmark, not after it.
func CheckURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return result.OptionErrorf("URL", s, "expected an http(s) URL such as http://127.0.0.1:9091")
	}
	return nil
}

// runLabels are the labels every series carries, from the run.
var runLabels = []string{"run", "mode", "stream", "model", "quantile", "quantity", "class", "slo"}

// Metric names pushed, each a gauge.
const (
	MetricClient     = "servebench_client_seconds"      // {quantity, quantile}: client medians, p90, p99
	MetricEngineMean = "servebench_engine_mean_seconds" // {quantity}: /metrics histogram means over the run
	MetricRequests   = "servebench_requests"            // measured requests sent
	MetricOK         = "servebench_requests_ok"         // of which succeeded
	MetricErrors     = "servebench_errors"              // {class}: failed requests by error class
	MetricOutputTPS  = "servebench_output_tokens_per_second"
	MetricRPS        = "servebench_requests_per_second"
	MetricDuration   = "servebench_run_duration_seconds"
	MetricGoodput    = "servebench_goodput_requests_per_second" // {slo}: runs with --slo only
	MetricAttainment = "servebench_slo_attainment_ratio"        // {slo}: attained / measured, 0-1
	MetricPushTime   = "servebench_last_push_timestamp_seconds" // when the results were pushed
)

// Push pushes every run of res, replacing what the grouping key (job and
// Options.Labels) held before (the Pushgateway's PUT): a nightly job's
// figures are the last night's, never a mix. It returns the push's error;
// callers warn and keep the results on disk.
func Push(ctx context.Context, opts Options, res *result.Results) error {
	if err := CheckURL(opts.URL); err != nil {
		return err
	}
	if len(res.Runs) == 0 {
		return errors.New("no runs to push")
	}
	reg := prometheus.NewRegistry()
	g := newGauges(reg)
	for i := range res.Runs {
		g.add(&res.Runs[i])
	}
	g.pushTime.Set(float64(time.Now().UnixNano()) / 1e9)
	job := opts.Job
	if job == "" {
		job = DefaultJob
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := push.New(opts.URL, job).Gatherer(reg).Client(&http.Client{})
	for k, v := range opts.Labels {
		p = p.Grouping(k, v)
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("pushing to %s (job %q): %w", opts.URL, job, err)
	}
	return nil
}

type gauges struct {
	client, engine, errs              *prometheus.GaugeVec
	requests, ok, otps, rps, duration *prometheus.GaugeVec
	goodput, attainment               *prometheus.GaugeVec
	pushTime                          prometheus.Gauge
}

func newGauges(reg *prometheus.Registry) *gauges {
	base := []string{"run", "mode", "stream", "model"}
	vec := func(name, help string, extra ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, append(append([]string{}, base...), extra...))
		reg.MustRegister(v)
		return v
	}
	g := &gauges{
		client:     vec(MetricClient, "Client-clock latency over the run's successful requests (servebench's median, p90, p99).", "quantity", "quantile"),
		engine:     vec(MetricEngineMean, "Engine-clock mean from the server's /metrics histograms over the run.", "quantity"),
		errs:       vec(MetricErrors, "Failed measured requests by servebench error class.", "class"),
		requests:   vec(MetricRequests, "Measured requests sent in the run (warm-up excluded)."),
		ok:         vec(MetricOK, "Measured requests that succeeded."),
		otps:       vec(MetricOutputTPS, "Output tokens per second over the run."),
		rps:        vec(MetricRPS, "Requests per second over the run."),
		duration:   vec(MetricDuration, "Duration of the run's measured part."),
		goodput:    vec(MetricGoodput, "Requests per second that met every threshold of the run's SLO (--slo).", "slo"),
		attainment: vec(MetricAttainment, "Fraction of measured requests that met the run's SLO (--slo); failures never do.", "slo"),
		pushTime:   prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricPushTime, Help: "When servebench pushed these results (Unix seconds)."}),
	}
	reg.MustRegister(g.pushTime)
	return g
}

func (g *gauges) add(run *result.Run) {
	lv := []string{run.Name, string(run.Workload.Mode), strconv.FormatBool(run.Stream), run.Workload.Model}
	with := func(extra ...string) []string { return append(append([]string{}, lv...), extra...) }
	c := run.Client
	for _, q := range []struct {
		name string
		s    *stats.Summary
	}{
		{"first_visible", c.FirstVisibleS}, {"first_token", c.FirstTokenS}, {"ttfb", c.TTFBS},
		{"e2e", c.E2ES}, {"tpot", c.TPOTS}, {"itl", c.ITLS},
	} {
		if q.s == nil { // absent, never zero: a gap in Grafana, not a fake 0
			continue
		}
		g.client.WithLabelValues(with(q.name, "0.5")...).Set(q.s.Median)
		g.client.WithLabelValues(with(q.name, "0.9")...).Set(q.s.P90)
		g.client.WithLabelValues(with(q.name, "0.99")...).Set(q.s.P99)
	}
	e := run.Engine
	for _, q := range []struct {
		name string
		h    *result.Hist
	}{
		{"ttft", e.TTFTS}, {"e2e", e.E2ES}, {"queue", e.QueueS}, {"prefill", e.PrefillS}, {"decode", e.DecodeS}, {"itl", e.ITLS},
	} {
		if q.h != nil {
			g.engine.WithLabelValues(with(q.name)...).Set(q.h.Mean)
		}
	}
	for class, n := range run.Errors {
		g.errs.WithLabelValues(with(class)...).Set(float64(n))
	}
	g.requests.WithLabelValues(lv...).Set(float64(run.Requests))
	g.ok.WithLabelValues(lv...).Set(float64(run.OK))
	g.otps.WithLabelValues(lv...).Set(run.Throughput.OutputTokensPerS)
	g.rps.WithLabelValues(lv...).Set(run.Throughput.RequestsPerS)
	g.duration.WithLabelValues(lv...).Set(run.DurationS)
	if gp := run.Goodput; gp != nil {
		g.goodput.WithLabelValues(with(gp.SLO)...).Set(gp.RatePerS)
		g.attainment.WithLabelValues(with(gp.SLO)...).Set(gp.Attainment / 100)
	}
}
