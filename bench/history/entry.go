package history

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"time"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
	"github.com/servebench/servebench/bench/store"
)

// Gate verdicts kept with an entry (Entry.Gate).
const (
	GatePass = "pass" // judged against the history and within its noise
	GateFail = "fail" // judged and found a regression: kept out of later baselines
)

// Entry is one run as the history keeps it.
type Entry struct {
	ID         int64     // assigned by Add
	RecordedAt time.Time // when Add stored it
	StartedAt  time.Time // the run's start
	Source     string    // the results directory or file it came from
	Run        string    // the run's name ("streaming", "c=8")
	// WorkloadFP and ServerFP are the fingerprints that say which runs are
	// comparable (WorkloadFingerprint, ServerFingerprint).
	WorkloadFP, ServerFP string
	Build                result.Build
	Labels               map[string]string
	Tool                 string // servebench's version, or the foreign tool that wrote the results
	ServerVersion        string
	ServerCommand        string
	Preset               string
	Model                string
	Bundled              *result.Bundled
	Machine              result.Host
	Workload             result.Workload
	// Summary is the run as results.json holds it, its per-window figures
	// left out.
	Summary result.Run
	// Stats are the run-level statistics, keyed QUANTITY.STAT as
	// --max-regression names them ("client.e2e.median").
	Stats map[string]float64
	Gate  string // GatePass, GateFail, or "" when the run was not gated
}

// Commit is the entry's commit: its build's, else its label "commit"
// (results added by hand, or from a CI the build detection does not know).
func (e *Entry) Commit() string {
	if e.Build.Commit != "" {
		return e.Build.Commit
	}
	return e.Labels["commit"]
}

// FromResults makes one Entry per run of res. recs are the results'
// records, used only for a run whose client figures are absent (a vLLM
// result, whose records are its per-request arrays); source names where
// the results were read from.
func FromResults(res *result.Results, recs []result.Record, source string) []Entry {
	var out []Entry
	for i := range res.Runs {
		r := res.Runs[i]
		r.Windows = nil
		if r.Client.E2ES == nil && len(recs) > 0 {
			r.Client = store.ClientSummary(runRecords(recs, r.Name))
		}
		e := Entry{StartedAt: r.StartedAt, Source: source, Run: r.Name,
			WorkloadFP: WorkloadFingerprint(&r), ServerFP: ServerFingerprint(&res.Server),
			Labels: res.Manifest.Labels, Tool: res.Manifest.Version, ServerVersion: res.Server.Version,
			ServerCommand: res.Server.Command, Preset: res.Server.Preset, Model: res.Server.Model,
			Bundled: res.Server.Bundled, Machine: res.Manifest.Host, Workload: r.Workload, Summary: r,
			Stats: RunStats(&r)}
		if e.StartedAt.IsZero() {
			e.StartedAt = res.Manifest.StartedAt
		}
		if b := res.Manifest.Build; b != nil {
			e.Build = *b
		}
		out = append(out, e)
	}
	return out
}

// runRecords are the measured outcomes of run name among recs.
func runRecords(recs []result.Record, name string) []result.Record {
	var out []result.Record
	for _, r := range recs {
		if r.Run == name && r.Outcome() {
			out = append(out, r)
		}
	}
	return out
}

// WorkloadFingerprint identifies what a run asked of the server: a hash
// of its workload record (which holds streaming, the traffic, the prompt
// source and the seed), so two runs share it exactly when compare would
// not refuse them for differing workloads.
func WorkloadFingerprint(r *result.Run) string {
	w := r.Workload
	w.Stream = r.Stream
	return fingerprint(w)
}

// serverFacts are what makes two servers the same system to benchmark:
// the model, how it is served (preset, dialect) and, for the bundled
// engine, the hardware it emulates and its pace. The build (server
// version, flags, the bundled engine's vLLM release) is left out on
// purpose: it is what a history follows from commit to commit.
type serverFacts struct {
	Model, Preset, Dialect string
	GPU, BundledModel      string
	Speedup                float64
	TP, PP                 int
	KVRole                 string
}

// ServerFingerprint identifies the system under test (serverFacts).
func ServerFingerprint(s *result.Server) string {
	f := serverFacts{Model: s.Model, Preset: s.Preset, Dialect: s.Dialect}
	if b := s.Bundled; b != nil {
		f.GPU, f.BundledModel, f.Speedup, f.TP, f.PP, f.KVRole = b.GPU, b.Model, b.Speedup, b.TensorParallelSize, b.PipelineParallelSize, b.KVRole
	}
	return fingerprint(f)
}

func fingerprint(v any) string {
	data, _ := json.Marshal(v) // plain structs: cannot fail
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:6])
}

// RunStats are a run's statistics the history keeps: median, p90 and p99
// (and mean) of each client quantity, the engine histograms' mean and
// quantile estimates, throughput, the error rate and goodput. A quantity
// the run has no figure of is absent.
func RunStats(r *result.Run) map[string]float64 {
	m := map[string]float64{}
	c := &r.Client
	for _, q := range []struct {
		name string
		s    *stats.Summary
	}{
		{"client.first_visible", c.FirstVisibleS}, {"client.first_token", c.FirstTokenS}, {"client.ttfb", c.TTFBS},
		{"client.e2e", c.E2ES}, {"client.tpot", c.TPOTS}, {"client.itl", c.ITLS},
		{"client.first_visible_from_intended", c.FirstVisibleFromIntendedS}, {"client.e2e_from_intended", c.E2EFromIntendedS},
	} {
		if q.s != nil && q.s.N > 0 {
			put(m, q.name, "median", q.s.Median)
			put(m, q.name, "mean", q.s.Mean)
			put(m, q.name, "p90", q.s.P90)
			put(m, q.name, "p99", q.s.P99)
		}
	}
	e := &r.Engine
	for _, q := range []struct {
		name string
		h    *result.Hist
	}{{"engine.ttft", e.TTFTS}, {"engine.e2e", e.E2ES}, {"engine.queue", e.QueueS}, {"engine.itl", e.ITLS}} {
		if q.h != nil && q.h.Count > 0 {
			put(m, q.name, "mean", q.h.Mean)
			put(m, q.name, "p50", q.h.P50Est)
			put(m, q.name, "p90", q.h.P90Est)
			put(m, q.name, "p99", q.h.P99Est)
		}
	}
	if r.OK > 0 {
		put(m, "throughput", "output_tokens_per_s", r.Throughput.OutputTokensPerS)
		put(m, "throughput", "requests_per_s", r.Throughput.RequestsPerS)
	}
	if r.Requests > 0 {
		put(m, "errors", "rate", float64(r.Requests-r.OK)/float64(r.Requests))
	}
	if g := r.Goodput; g != nil && g.Requests > 0 {
		put(m, "goodput", "attainment", g.Attainment)
		put(m, "goodput", "rate_per_s", g.RatePerS)
	}
	return m
}

func put(m map[string]float64, q, stat string, v float64) {
	if !math.IsNaN(v) && !math.IsInf(v, 0) {
		m[q+"."+stat] = v
	}
}
