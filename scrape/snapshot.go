package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
)

// Limits on one scrape. A /metrics page of a busy vLLM server is about
// 50-200 KiB; the cap only stops a wrong URL (a model file, a log stream)
// from filling memory.
const (
	// MaxBodyBytes is the largest exposition Fetch and ParseFile accept.
	MaxBodyBytes = 32 << 20
	// DefaultTimeout bounds Fetch when ctx has no deadline of its own.
	DefaultTimeout = 10 * time.Second
)

// ReplicaLabel is the label FetchAll adds to every series when it merges
// several URLs, so that replicas' series stay apart and Diff and Gauge sum
// them (or average them, for ratios such as KV-cache usage) like any other
// label set.
const ReplicaLabel = "servebench_replica"

// Snapshot is one parsed /metrics exposition. Families is keyed by family
// name as expfmt reports it (a histogram under its base name, a counter
// with its _total suffix). A Snapshot is not modified after it is built.
type Snapshot struct {
	At       time.Time                    // when the exposition was read
	Families map[string]*dto.MetricFamily // by family name
	Source   string                       // URL(s) or file it came from, for messages
}

// ParseError is an exposition that could not be parsed: where it came from
// and the line the text-format parser stopped at (0 when not a line error).
type ParseError struct {
	Source string
	Line   int
	Msg    string
}

// Error names the source and, when known, the line.
func (e *ParseError) Error() string {
	src := e.Source
	if src == "" {
		src = "input"
	}
	if e.Line > 0 {
		return fmt.Sprintf("parsing /metrics from %s: line %d: %s", src, e.Line, e.Msg)
	}
	return fmt.Sprintf("parsing /metrics from %s: %s", src, e.Msg)
}

// Parse reads a Prometheus text-format exposition (version 0.0.4, what
// vLLM, SGLang, TGI and llama.cpp serve). Errors are *ParseError with the
// line number; use ParseSource to have them name the input.
func Parse(r io.Reader) (*Snapshot, error) { return ParseSource(r, "") }

// ParseSource is Parse with the input's name (a URL or file path) recorded
// in the Snapshot and in errors.
func ParseSource(r io.Reader, source string) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	// expfmt rejects a last line without its newline; saved files and some
	// servers end that way, and a trailing blank line is harmless.
	fams, err := p.TextToMetricFamilies(io.MultiReader(r, strings.NewReader("\n")))
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return nil, &ParseError{Source: source, Line: pe.Line, Msg: pe.Msg}
		}
		return nil, &ParseError{Source: source, Msg: err.Error()}
	}
	if err := checkDuplicates(fams); err != nil {
		return nil, &ParseError{Source: source, Msg: err.Error()}
	}
	return &Snapshot{At: time.Now(), Families: fams, Source: source}, nil
}

// ParseFile parses the exposition saved in path (for example by
// `curl -s http://host/metrics > file`).
func ParseFile(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading metrics file: %w", err)
	}
	defer f.Close()
	body, err := readCapped(f, path)
	if err != nil {
		return nil, err
	}
	s, err := ParseSource(bytes.NewReader(body), path)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil {
		s.At = fi.ModTime() // the file's content is from then, not now
	}
	return s, nil
}

func readCapped(r io.Reader, source string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading /metrics from %s: %w", source, err)
	}
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("reading /metrics from %s: larger than %d bytes; is this a /metrics URL?", source, MaxBodyBytes)
	}
	return body, nil
}

// defaultClient is used when Fetch is given a nil *http.Client.
var defaultClient = &http.Client{Timeout: DefaultTimeout}

// Fetch GETs rawURL and parses the exposition. A nil hc uses a client with
// DefaultTimeout; a ctx without deadline gets DefaultTimeout too. Any status
// but 200 is an error naming the URL and the status.
func Fetch(ctx context.Context, hc *http.Client, rawURL string) (*Snapshot, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("metrics URL %q: want http://host[:port]/path", rawURL)
	}
	if hc == nil {
		hc = defaultClient
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics URL %q: %w", rawURL, err)
	}
	// Ask for the classic text format: it is what expfmt's TextParser reads,
	// and what every server here serves by default.
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching /metrics: %w", err) // *url.Error names the URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		head, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("fetching /metrics from %s: HTTP %s: %s", rawURL, resp.Status, strings.TrimSpace(string(head)))
	}
	body, err := readCapped(resp.Body, rawURL)
	if err != nil {
		return nil, err
	}
	s, err := ParseSource(bytes.NewReader(body), rawURL)
	if err != nil {
		return nil, err
	}
	s.At = start
	return s, nil
}

// FetchAll fetches every URL concurrently (replicas behind one endpoint)
// and merges them into one Snapshot. With one URL it is Fetch. With more,
// each series gets ReplicaLabel = its URL's index, so that Diff and Gauge
// sum counters and histograms across replicas. Any failed URL fails the
// whole call: a sum over some replicas would be silently wrong.
func FetchAll(ctx context.Context, hc *http.Client, urls []string) (*Snapshot, error) {
	switch len(urls) {
	case 0:
		return nil, errors.New("fetching /metrics: no URL given")
	case 1:
		return Fetch(ctx, hc, urls[0])
	}
	for i, u := range urls {
		if slices.Contains(urls[:i], u) {
			// The same server twice would be summed twice.
			return nil, fmt.Errorf("metrics URL %q given twice", u)
		}
	}
	snaps := make([]*Snapshot, len(urls))
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Go(func() { snaps[i], errs[i] = Fetch(ctx, hc, u) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return merge(snaps, urls), nil
}

// merge tags each snapshot's series with ReplicaLabel and unions them.
func merge(snaps []*Snapshot, urls []string) *Snapshot {
	out := &Snapshot{At: snaps[0].At, Families: map[string]*dto.MetricFamily{}, Source: strings.Join(urls, ",")}
	for i, s := range snaps {
		if s.At.Before(out.At) {
			out.At = s.At
		}
		tag := strconv.Itoa(i)
		for name, fam := range s.Families {
			dst := out.Families[name]
			if dst == nil {
				dst = &dto.MetricFamily{Name: fam.Name, Help: fam.Help, Type: fam.Type, Unit: fam.Unit}
				out.Families[name] = dst
			} else if dst.GetType() != fam.GetType() {
				continue // replicas disagree on the type; keep the first one's view
			}
			for _, m := range fam.GetMetric() {
				c := proto.Clone(m).(*dto.Metric)
				c.Label = slices.DeleteFunc(c.Label, func(lp *dto.LabelPair) bool { return lp.GetName() == ReplicaLabel })
				c.Label = append(c.Label, &dto.LabelPair{Name: proto.String(ReplicaLabel), Value: proto.String(tag)})
				dst.Metric = append(dst.Metric, c)
			}
		}
	}
	return out
}

// checkDuplicates rejects two series with the same label set in one family:
// expfmt keeps both, and any sum over them would double-count.
func checkDuplicates(fams map[string]*dto.MetricFamily) error {
	for name, fam := range fams {
		if len(fam.GetMetric()) < 2 {
			continue
		}
		seen := make(map[string]struct{}, len(fam.GetMetric()))
		for _, m := range fam.GetMetric() {
			k := seriesKey(m)
			if _, dup := seen[k]; dup {
				return fmt.Errorf("duplicate series %s%s", name, labelString(m))
			}
			seen[k] = struct{}{}
		}
	}
	return nil
}

// seriesKey identifies a series by its label set, independent of the order
// the labels were written in.
func seriesKey(m *dto.Metric) string {
	lp := m.GetLabel()
	switch len(lp) {
	case 0:
		return ""
	case 1:
		return lp[0].GetName() + "\xff" + lp[0].GetValue()
	}
	sorted := slices.Clone(lp)
	slices.SortFunc(sorted, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	var b strings.Builder
	for _, l := range sorted {
		b.WriteString(l.GetName())
		b.WriteByte(0xff)
		b.WriteString(l.GetValue())
		b.WriteByte(0xfe)
	}
	return b.String()
}

// labelString renders a series' labels as {a="1",b="2"} for messages.
func labelString(m *dto.Metric) string {
	lp := slices.Clone(m.GetLabel())
	if len(lp) == 0 {
		return ""
	}
	slices.SortFunc(lp, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	parts := make([]string, len(lp))
	for i, l := range lp {
		parts[i] = fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// labelValue returns the value of label name on m.
func labelValue(m *dto.Metric, name string) (string, bool) {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue(), true
		}
	}
	return "", false
}
