package report

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/servebench/servebench/bench/result"
)

// Sample says how the records a report got from ChartRecords stand for a
// requests.jsonl too large to read back whole: per run, a uniform sample of
// the measured records; exactly, the slowest requests, the request nearest
// each run's median E2E and the lines of each kind. nil: every record.
type Sample struct {
	Runs    map[string]*RunSample
	Slowest []*result.Record // report.md's slowest requests, exactly (Slowest's rule)
}

// RunSample is one run's part of a Sample.
type RunSample struct {
	N      int    // measured records in the file
	Counts [3]int // measured, warm-up, retried lines (countRecords)
	// Median is the measured record whose E2E is nearest the run's median
	// in results.json (the first such), with its events: the timeline's
	// representative request, not the sample's.
	Median    result.Record
	HasMedian bool
	// Thin is a second uniform sample, of maxThinLines records with their
	// events: tokens.png's thin lines. The records the report gets drop
	// their events (no other chart draws them), so that more fit.
	Thin   []result.Record
	median float64 // results.json's median E2E; NaN when absent
	kept   int     // sample records kept so far
	rng    *rand.Rand
}

// recordStrings bounds, as a rule, the bytes of a measured record's
// strings (run name, request id, finish reason, tokens_from, session).
const recordStrings = 128

// drawCopies is how many copies of a run's records the report holds at
// once while drawing, at most: measured's, and medianRecord's sort of it.
const drawCopies = 2

// sampleSeed fixes the sample, so that `servebench report DIR` run twice
// draws the same charts.
const sampleSeed = 0x5eb1e

// sampleRecords streams path once and keeps, within about maxBytes, a
// uniform sample of each run's measured records (reservoir sampling,
// seeded by the run's name), the exact slowest requests, each run's
// record nearest its results.json median E2E, and exact line counts.
func sampleRecords(path string, r io.Reader, size, maxBytes int64, res *result.Results) ([]result.Record, *Sample, []string, error) {
	s := newSample(res)
	lines := 0
	for _, run := range res.Runs {
		lines += run.Requests
	}
	k := sampleSize(res, lines, size, maxBytes)
	recs := make([]result.Record, 0, min(k*len(res.Runs), lines))
	at := map[string][]int{} // a run's sample: indexes into recs
	// Records are read without their events, most of each line's decoding;
	// the few kept with them (the thin lines, the median request) are
	// decoded again from their lines.
	rr := result.NewRecordReader(path, r)
	rr.SkipEvents = true
	for {
		var rec result.Record
		line, err := rr.Next(&rec)
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, nil, err
		}
		if slowestCandidate(&rec) { // of whichever run
			s.keepSlowest(&rec)
		}
		rs := s.Runs[rec.Run]
		if rs == nil { // a record of no run in results.json: as countRecords, it counts nowhere
			continue
		}
		rs.Counts[recordKind(&rec)]++
		if !isMeasured(&rec) {
			continue
		}
		rs.add(line, rec)
		switch {
		case rs.kept < k:
			at[rec.Run] = append(at[rec.Run], len(recs))
			recs = append(recs, rec)
			rs.kept++
		default:
			if j := rs.rng.IntN(rs.N); j < k {
				recs[at[rec.Run][j]] = rec
			}
		}
	}
	warns := rr.Warnings
	for name, rs := range s.Runs {
		if math.IsNaN(rs.median) && rs.N > 0 { // no median in results.json: the sample's
			rs.Median, rs.HasMedian = medianRecord(measured(name, recs))
		}
	}
	return recs, s, warns, nil
}

// newSample is an empty sample of res' runs, each with its results.json
// median E2E and its own generator, seeded by its name.
func newSample(res *result.Results) *Sample {
	s := &Sample{Runs: map[string]*RunSample{}}
	for _, run := range res.Runs {
		rs := &RunSample{median: math.NaN()}
		if e := run.Client.E2ES; e != nil && e.N > 0 {
			rs.median = e.Median
		}
		h := fnv.New64a()
		h.Write([]byte(run.Name))
		rs.rng = rand.New(rand.NewPCG(sampleSeed, h.Sum64()))
		s.Runs[run.Name] = rs
	}
	return s
}

// sampleSize is how many records each run's uniform sample keeps. A
// sampled record, its events dropped, costs the Record and its strings
// (run, request id, finish reason: recordStrings at most, as a rule), and
// as much again for each copy the report makes while it draws
// (drawCopies); maxBytes, less the thin lines' records with their events
// (lines of the file's average size, size/lines), holds this many, shared
// by the runs, and at least what tokens.png draws.
func sampleSize(res *result.Results, lines int, size, maxBytes int64) int {
	k := maxThinLines
	if lines > 0 && len(res.Runs) > 0 {
		thin := int64(maxThinLines*len(res.Runs)) * (size / int64(lines))
		per := (1 + drawCopies) * (int64(unsafe.Sizeof(result.Record{})) + recordStrings)
		k = max(k, int((maxBytes-min(thin, maxBytes/2))/per)/len(res.Runs))
	}
	return k
}

// add counts a measured record of the run (line, read without its
// events) and keeps it, with its events, if it is the nearest the median
// so far or drawn for the thin lines.
func (rs *RunSample) add(line []byte, rec result.Record) {
	rs.N++
	if d := math.Abs(rec.E2ES - rs.median); !rs.HasMedian || d < math.Abs(rs.Median.E2ES-rs.median) {
		rs.Median, rs.HasMedian = withEvents(line, rec), true
	}
	// Algorithm R: the i-th record replaces a uniformly chosen one of
	// the k kept with probability k/i, so each is kept with k/N.
	if j := len(rs.Thin); j < maxThinLines {
		rs.Thin = append(rs.Thin, withEvents(line, rec))
	} else if j = rs.rng.IntN(rs.N); j < maxThinLines {
		rs.Thin[j] = withEvents(line, rec)
	}
}

// withEvents is rec (read without its events) decoded whole from its line.
func withEvents(line []byte, rec result.Record) result.Record {
	var full result.Record
	if json.Unmarshal(line, &full) != nil { // it decoded once: cannot happen
		return rec
	}
	return full
}

// keepSlowest keeps rec if it is among the SlowestN longest E2E so far; a
// tie goes to the earlier line, as Slowest's stable sort gives it.
func (s *Sample) keepSlowest(rec *result.Record) {
	i := len(s.Slowest)
	for i > 0 && rec.E2ES > s.Slowest[i-1].E2ES {
		i--
	}
	if i >= SlowestN {
		return
	}
	c := *rec
	c.Events = nil // the section shows none
	s.Slowest = append(s.Slowest[:i], append([]*result.Record{&c}, s.Slowest[i:]...)...)
	s.Slowest = s.Slowest[:min(len(s.Slowest), SlowestN)]
}

// run returns run's part of s; nil when s is nil (every record was read).
func (s *Sample) run(name string) *RunSample {
	if s == nil {
		return nil
	}
	return s.Runs[name]
}

// Note says what a chart or section drawn from s's records stands on, ""
// when s is nil: "a uniform sample of n of N requests" per run.
func (s *Sample) Note(res *result.Results) string { return s.note(res, false) }

// note is Note, of the Thin samples when thin.
func (s *Sample) note(res *result.Results, thin bool) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, run := range res.Runs {
		rs := s.Runs[run.Name]
		if rs == nil || rs.N == 0 {
			continue
		}
		n := rs.kept
		if thin {
			n = len(rs.Thin)
		}
		p := fmt.Sprintf("a uniform sample of %d of %d requests", n, rs.N)
		if len(res.Runs) > 1 {
			p = RunLabel(run.Name) + ": " + p
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	return "Drawn from " + strings.Join(parts, "; ") + " (requests.jsonl too large to read back whole)."
}

// openRecords opens dir's requests.jsonl.
func openRecords(dir string) (*os.File, os.FileInfo, string, error) {
	path := filepath.Join(dir, result.RequestsFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, path, &result.InputError{Path: path, Err: err}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, path, &result.InputError{Path: path, Err: err}
	}
	return f, fi, path, nil
}
