package promql

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/servebench/servebench/scrape"
)

// Options say which Prometheus to ask and about which series.
type Options struct {
	URL      string        // http(s)://host:port of the Prometheus server
	Selector Selector      // added to every query
	Filter   scrape.Filter // model filter: added as a matcher on the dialect's model label
	// Wait bounds the wait for a scrape newer than a window's end; 0 means
	// three scrape intervals (from the targets API; 1 m, Prometheus' default
	// interval, when it does not say).
	Wait time.Duration
	HTTP *http.Client // nil: a client with a 10 s timeout
}

// Source reads engine figures from one Prometheus server. Detect must run
// before Window (Window calls it if not). A Source is not safe for
// concurrent use.
type Source struct {
	opts    Options
	api     v1.API
	client  api.Client
	dialect *scrape.Dialect
	names   *scrape.Snapshot // families present under the selector (names only)
	prom3   bool             // ranges are left-open (Prometheus 3)
	Version string           // the server's version, from buildinfo
}

// queryTimeout bounds one API call.
const queryTimeout = 10 * time.Second

// New checks the options and builds the API client; it does not connect.
func New(opts Options) (*Source, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("prometheus URL %q: want http(s)://host[:port]", opts.URL)
	}
	hc := opts.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: queryTimeout}
	}
	c, err := api.NewClient(api.Config{Address: opts.URL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("prometheus URL %q: %w", opts.URL, err)
	}
	return &Source{opts: opts, api: v1.NewAPI(c), client: c}, nil
}

// URL returns the Prometheus server's URL.
func (s *Source) URL() string { return s.opts.URL }

// Selector returns the matchers every query carries.
func (s *Source) Selector() Selector { return s.opts.Selector }

// Detect learns the server's dialect from the metric names Prometheus holds
// under the selector over the last hour, and the Prometheus version.
func (s *Source) Detect(ctx context.Context) (*scrape.Dialect, error) {
	if s.dialect != nil {
		return s.dialect, nil
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	now := time.Now()
	var match []string // Prometheus refuses an empty match[] ("{}"): none lists every name
	if len(s.opts.Selector) > 0 {
		match = []string{s.opts.Selector.String()}
	}
	vals, _, _, err := s.api.LabelValues(ctx, "__name__", match, now.Add(-time.Hour), now)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: listing metric names under %s: %w", s.opts.URL, s.opts.Selector, err)
	}
	snap := &scrape.Snapshot{At: now, Families: map[string]*dto.MetricFamily{}, Source: s.opts.URL}
	for _, v := range vals {
		n := string(v)
		snap.Families[n] = nil
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suf); ok {
				snap.Families[base] = nil
			}
		}
	}
	dl, ok := scrape.Detect(snap)
	if !ok {
		return nil, fmt.Errorf("prometheus %s: no vLLM, SGLang, TGI or llama.cpp metrics under %s in the last hour (%d metric names)", s.opts.URL, s.opts.Selector, len(vals))
	}
	if bi, err := s.api.Buildinfo(ctx); err == nil {
		s.Version = bi.Version
		s.prom3 = !strings.HasPrefix(bi.Version, "2.") && !strings.HasPrefix(bi.Version, "1.")
	}
	s.dialect, s.names = dl, snap
	return dl, nil
}

// Replica is one replica's engine figures over a window.
type Replica struct {
	Name          string // pod when the series have one, else instance
	Instance, Pod string
	From, To      time.Time // the scrapes bounding its window
	Delta         *scrape.Delta
	Gauges        map[scrape.Quantity]Gauge // over the window
	Resets        int                       // counter resets Prometheus saw in the window
}

// Gauge is a gauge's mean and maximum over a window (avg_over_time,
// max_over_time).
type Gauge struct{ Mean, Max float64 }

// Window is the engine's account of one run read from Prometheus.
type Window struct {
	From, To time.Time // the run's window as asked
	Total    *scrape.Delta
	Replicas []Replica // sorted by name
	Queries  []string  // every query the figures come from, in order
	Interval time.Duration
	Lag      time.Duration // longest wait from To to a replica's first scrape after it
	Waited   time.Duration // how long Window waited for those scrapes
	Resets   int
	Warnings []string
}

// replicaKey tells replicas apart.
type replicaKey struct{ instance, pod string }

func (k replicaKey) name() string {
	if k.pod != "" {
		return k.pod
	}
	return k.instance
}

// Window reads [from, to]: it waits (bounded) until every replica has a
// scrape after to, then queries each replica's increase over its aligned
// window. With minRequests > 0 it keeps waiting for newer scrapes while the
// engine's finished-request count is below it (a lagging count), within the
// same bound.
func (s *Source) Window(ctx context.Context, from, to time.Time, minRequests int) (*Window, error) {
	dl, ref, err := s.reference(ctx)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	before, err := s.startScrapes(ctx, ref, from)
	if err != nil {
		return nil, err
	}
	w := &Window{From: from, To: to}
	w.Interval = s.interval(ctx, before)
	deadline := start.Add(s.wait(w.Interval))
	after := to
	for {
		ends, err := s.waitScrapes(ctx, ref, before, after, deadline)
		if err != nil {
			return nil, err
		}
		*w = Window{From: from, To: to, Interval: w.Interval}
		if err := s.read(ctx, dl, ref, w, before, ends); err != nil {
			return nil, err
		}
		n, _ := w.Total.Counter(scrape.EngineRequests)
		if n >= float64(minRequests) || !time.Now().Before(deadline) {
			break
		}
		for _, t := range ends {
			after = later(after, t)
		}
	}
	w.Waited = time.Since(start)
	return w, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// WaitScrape waits (bounded like Window) until every replica has a scrape
// after t: a run's warm-up must be in the counters before its window opens.
func (s *Source) WaitScrape(ctx context.Context, t time.Time) error {
	dl, err := s.Detect(ctx)
	if err != nil {
		return err
	}
	ref, ok := s.refSeries(dl)
	if !ok {
		return nil
	}
	now, _, err := s.latest(ctx, ref, time.Now())
	if err != nil {
		return err
	}
	_, err = s.waitScrapes(ctx, ref, now, t, time.Now().Add(s.wait(s.interval(ctx, now))))
	return err
}

// wait is how long to wait for a scrape newer than a window's end:
// Options.Wait, else three scrape intervals.
func (s *Source) wait(interval time.Duration) time.Duration {
	if s.opts.Wait > 0 {
		return s.opts.Wait
	}
	return 3 * interval
}

// reference detects the dialect and picks its reference series (refSeries).
func (s *Source) reference(ctx context.Context) (*scrape.Dialect, string, error) {
	dl, err := s.Detect(ctx)
	if err != nil {
		return nil, "", err
	}
	ref, ok := s.refSeries(dl)
	if !ok {
		return nil, "", fmt.Errorf("prometheus %s: %s exports no counter or histogram servebench reads", s.opts.URL, dl.Title)
	}
	return dl, ref, nil
}

// startScrapes is each replica's last scrape at or before from, where a
// run's window opens; an error when there is none.
func (s *Source) startScrapes(ctx context.Context, ref string, from time.Time) (map[replicaKey]time.Time, error) {
	before, _, err := s.latest(ctx, ref, from)
	if err != nil {
		return nil, err
	}
	if len(before) == 0 {
		return nil, fmt.Errorf("prometheus %s: no %s series at the run's start: is Prometheus scraping the server?", s.opts.URL, s.opts.Selector.With(ref))
	}
	return before, nil
}

// refSeries is the series whose sample times stand for a replica's scrapes:
// the first counter or histogram count the dialect maps and Prometheus has.
func (s *Source) refSeries(dl *scrape.Dialect) (string, bool) {
	for _, m := range dl.Mappings {
		k := m.Quantity.Kind()
		if k != scrape.KindCounter && k != scrape.KindHistogram {
			continue
		}
		name, ok := dl.MetricName(s.names, m.Quantity)
		if !ok {
			continue
		}
		if m.Field == scrape.FieldSum {
			return name + "_sum", true
		}
		if m.Field == scrape.FieldCount || k == scrape.KindHistogram {
			return name + "_count", true
		}
		return name, true
	}
	return "", false
}

// latest returns each replica's latest sample time of ref at or before t.
func (s *Source) latest(ctx context.Context, ref string, t time.Time) (map[replicaKey]time.Time, string, error) {
	q := fmt.Sprintf("max by (instance, pod) (timestamp(%s))", s.opts.Selector.With(ref))
	v, err := s.query(ctx, q, t)
	if err != nil {
		return nil, q, err
	}
	out := map[replicaKey]time.Time{}
	for _, smp := range v {
		out[keyOf(smp.Metric)] = time.UnixMilli(int64(float64(smp.Value) * 1000)).UTC()
	}
	return out, q, nil
}

// waitScrapes polls until every replica (those in known and any new) has a
// sample of ref after t, or the deadline passes, and returns each one's
// first sample after t (its latest when none came: the window then ends
// before t, and the read warns).
func (s *Source) waitScrapes(ctx context.Context, ref string, known map[replicaKey]time.Time, t, deadline time.Time) (map[replicaKey]time.Time, error) {
	for {
		now := time.Now()
		last, _, err := s.latest(ctx, ref, now)
		if err != nil {
			return nil, err
		}
		done := true
		for k := range known {
			if lt, ok := last[k]; !ok || !lt.After(t) {
				done = false
			}
		}
		if done || !now.Before(deadline) {
			return s.firstAfter(ctx, ref, t, now, last)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// firstAfter returns each replica's first sample time of ref in (t, now];
// a replica with none keeps its latest (from last).
func (s *Source) firstAfter(ctx context.Context, ref string, t, now time.Time, last map[replicaKey]time.Time) (map[replicaKey]time.Time, error) {
	out := map[replicaKey]time.Time{}
	for k, lt := range last {
		out[k] = lt
	}
	span := now.Sub(t).Milliseconds()
	if span <= 0 {
		return out, nil
	}
	q := fmt.Sprintf("%s[%dms]", s.opts.Selector.With(ref), span)
	val, err := s.queryValue(ctx, q, now)
	if err != nil {
		return nil, err
	}
	m, ok := val.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("prometheus %s: %s: expected a range vector, got %s", s.opts.URL, q, val.Type())
	}
	first := map[replicaKey]time.Time{}
	for _, ss := range m {
		k := keyOf(ss.Metric)
		for _, p := range ss.Values {
			pt := p.Timestamp.Time().UTC()
			if pt.After(t) && (first[k].IsZero() || pt.Before(first[k])) {
				first[k] = pt
			}
		}
	}
	for k, ft := range first {
		out[k] = ft
	}
	return out, nil
}

// interval is the longest scrape interval of the targets behind the
// replicas, from the targets API; 1 m (Prometheus' default) when unknown.
func (s *Source) interval(ctx context.Context, replicas map[replicaKey]time.Time) time.Duration {
	const fallback = time.Minute
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	// client_golang's ActiveTarget has no scrapeInterval: read the JSON.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.client.URL("/api/v1/targets", nil).String()+"?state=active", nil)
	if err != nil {
		return fallback
	}
	_, body, err := s.client.Do(ctx, req)
	if err != nil {
		return fallback
	}
	var tr struct {
		Data struct {
			ActiveTargets []struct {
				Labels         map[string]string `json:"labels"`
				ScrapeInterval string            `json:"scrapeInterval"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &tr) != nil {
		return fallback
	}
	var longest time.Duration
	for _, t := range tr.Data.ActiveTargets {
		if _, ok := replicas[replicaKey{t.Labels["instance"], t.Labels["pod"]}]; !ok {
			continue
		}
		if d, err := model.ParseDuration(t.ScrapeInterval); err == nil {
			longest = max(longest, time.Duration(d))
		}
	}
	if longest == 0 {
		return fallback
	}
	return longest
}

func keyOf(m model.Metric) replicaKey {
	return replicaKey{string(m["instance"]), string(m["pod"])}
}

// queryValue runs one instant query at t, bounded by queryTimeout; an error
// names the server and the query.
func (s *Source) queryValue(ctx context.Context, q string, t time.Time) (model.Value, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	val, _, _, err := s.api.Query(ctx, q, t)
	if err != nil {
		return nil, fmt.Errorf("prometheus %s: %s: %w", s.opts.URL, q, err)
	}
	return val, nil
}

// query runs an instant query that must return a vector.
func (s *Source) query(ctx context.Context, q string, t time.Time) (model.Vector, error) {
	val, err := s.queryValue(ctx, q, t)
	if err != nil {
		return nil, err
	}
	v, ok := val.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("prometheus %s: %s: expected an instant vector, got %s", s.opts.URL, q, val.Type())
	}
	return v, nil
}

// Windows reads a run's consecutive windows one at a time, while the run
// goes on: Next reads the window from the last cut (the run's start at
// first) to the next once Prometheus has scraped past it, and Rest, once
// the run's own window is read, the windows left. Each window runs, per
// replica, from the scrape that ended the previous one (the first from
// the run's start scrape, as Window's) to the first scrape after its cut
// (the last to the run's end scrape), so the windows share their boundary
// scrapes and their counter increases add up to the run's. A window with
// no scrape inside it, or whose read failed, has a nil Total and says why
// in Warnings. Windows shares its Source's state: no other call on the
// Source may run at the same time.
type Windows struct {
	s        *Source
	from     time.Time                // the last cut
	before   map[replicaKey]time.Time // each replica's scrape at the last cut; nil: none read yet
	interval time.Duration
	read     int
}

// Windows starts reading the windows of a run that started at from.
func (s *Source) Windows(from time.Time) *Windows { return &Windows{s: s, from: from} }

// Read is the number of windows read so far.
func (ws *Windows) Read() int { return ws.read }

// Next waits (bounded like Window) until every replica has a scrape after
// to, then reads the window from the last cut to to. An error (Prometheus
// unreachable, ctx done) reads nothing: Next or Rest may try it again.
func (ws *Windows) Next(ctx context.Context, to time.Time) (*Window, error) {
	s := ws.s
	dl, ref, err := s.reference(ctx)
	if err != nil {
		return nil, err
	}
	if ws.before == nil {
		// Asked now, after the cut, not at the run's start: by now every
		// scrape at or before the start is stored, as when Window asks.
		before, err := s.startScrapes(ctx, ref, ws.from)
		if err != nil {
			return nil, err
		}
		ws.before, ws.interval = before, s.interval(ctx, before)
	}
	ends, err := s.waitScrapes(ctx, ref, ws.before, to, time.Now().Add(s.wait(ws.interval)))
	if err != nil {
		return nil, err
	}
	return ws.step(ctx, dl, ref, to, ends)
}

// Rest reads the windows left once the run's window w is read (by
// Window, over the same run): cut at cuts (ascending, the boundaries
// after the last window read), the last ending at w's end scrapes.
func (ws *Windows) Rest(ctx context.Context, w *Window, cuts []time.Time) ([]*Window, error) {
	s := ws.s
	dl, ref, err := s.reference(ctx)
	if err != nil {
		return nil, err
	}
	start, last := map[replicaKey]time.Time{}, map[replicaKey]time.Time{}
	var now time.Time
	for _, r := range w.Replicas {
		k := replicaKey{r.Instance, r.Pod}
		start[k], last[k] = r.From, r.To
		now = later(now, r.To)
	}
	if ws.before == nil {
		ws.before, ws.interval = start, w.Interval
	}
	out := make([]*Window, 0, len(cuts)+1)
	for i := 0; i <= len(cuts); i++ {
		to, ends := w.To, last
		if i < len(cuts) {
			to = cuts[i]
			if ends, err = s.firstAfter(ctx, ref, to, now, last); err != nil {
				return nil, err
			}
			for k, t := range ends { // never past the run's end scrape
				if t.After(last[k]) {
					ends[k] = last[k]
				}
			}
		}
		win, err := ws.step(ctx, dl, ref, to, ends)
		if err != nil {
			return nil, err
		}
		out = append(out, win)
	}
	return out, nil
}

// step reads the window from the last cut to to, ending at each replica's
// scrape in ends, and makes to the last cut. A failed read is the window's
// warning, unless ctx is done: then nothing is read.
func (ws *Windows) step(ctx context.Context, dl *scrape.Dialect, ref string, to time.Time, ends map[replicaKey]time.Time) (*Window, error) {
	win := &Window{From: ws.from, To: to, Interval: ws.interval}
	if err := ws.s.read(ctx, dl, ref, win, ws.before, ends); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		win.Total, win.Warnings = nil, append(win.Warnings, err.Error())
	}
	ws.from, ws.before = to, ends
	ws.read++
	return win, nil
}
