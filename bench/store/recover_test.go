package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// TestRecoverStreamEqualsMemory: the streamed rebuild (samples spilled to
// files, a few windows open at once, windows whose records came late
// counted again in later passes, selection over the files by radix)
// writes results.json byte for byte as the rebuild that read every record
// into memory did (recoverInMemory: Recover as it was), on a killed
// soak's directory: a finished run and an interrupted one whose windows'
// records reach the file out of order, with warm-up, retried attempts,
// errors, late sends, a checkpointed window without records, records of
// windows past the last checkpointed boundary and a truncated last line
// (a warning naming the file and line). No sample file is left named in
// the directory.
func TestRecoverStreamEqualsMemory(t *testing.T) {
	src := t.TempDir()
	n := writeKilledSoak(t, src)
	want := recoverInMemory(t, src)
	for _, tc := range []struct {
		lim         rebuildLimits
		selectLimit int
	}{{}, {rebuildLimits{openWindows: 1}, 64}, {rebuildLimits{openWindows: 2}, 0}} {
		lim := tc.lim
		t.Run(fmt.Sprintf("open=%d,select=%d", lim.openWindows, tc.selectLimit), func(t *testing.T) {
			setSelectLimit(t, tc.selectLimit)
			dir := t.TempDir()
			for _, f := range []string{result.CheckpointFile, result.RequestsFile} {
				data, _ := os.ReadFile(filepath.Join(src, f))
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, warns, err := recoverDir(dir, lim)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 1 || !strings.Contains(warns[0], result.RequestsFile+fmt.Sprintf(":%d: truncated last line", n+1)) {
				t.Errorf("warnings %q, want the truncated line %d of %s named", warns, n+1, result.RequestsFile)
			}
			if r := res.Runs[1]; r.Requests == 0 || len(r.Windows) != 7 || r.Windows[2].Requests != 0 || r.Client.ITLS == nil {
				t.Fatalf("rebuilt run: %d requests, %d windows, window 3 %d requests, itl %v; want the fixture's",
					r.Requests, len(r.Windows), r.Windows[2].Requests, r.Client.ITLS)
			}
			got, err := os.ReadFile(filepath.Join(dir, result.ResultsFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("streamed rebuild's results.json differs from the in-memory one's:\n%s", firstDiff(got, want))
			}
			if files, _ := filepath.Glob(filepath.Join(dir, ".servebench-samples-*")); len(files) != 0 {
				t.Errorf("sample files left in the directory: %v", files)
			}
		})
	}
}

// writeKilledSoak writes into dir what kill -9 of a two-run session leaves
// (checkpoint.json, requests.jsonl ending in half a line) and returns the
// number of complete lines. Run "b" was interrupted after 6 checkpointed
// 1 s windows (the first two with engine deltas); its records went on to
// windows 7 and 8 (one rebuilt window past the last boundary); one in ten reaches the file up to three windows late;
// window 3 has none.
func writeKilledSoak(t *testing.T, dir string) int {
	t.Helper()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cp := &result.Results{Schema: result.Schema, Warnings: []string{}, Runs: []result.Run{
		{Name: "a", Stream: true, StartedAt: start.Add(-time.Minute), DurationS: 30, Requests: 5, OK: 5, Errors: map[string]int{}},
		{Name: "b", Stream: true, StartedAt: start, DurationS: 6, Incomplete: true, Errors: map[string]int{}},
	}}
	for i := range 6 {
		w := result.Window{Index: i + 1, StartS: float64(i), EndS: float64(i + 1), Requests: 1}
		if i < 2 {
			w.Engine = &result.WindowEngine{EngineStats: result.EngineStats{TTFTS: &result.Hist{Mean: 0.02 * float64(i+1), Count: 40}}}
		}
		cp.Runs[1].Windows = append(cp.Runs[1].Windows, w)
	}
	if err := WriteJSON(dir, result.CheckpointFile, cp); err != nil {
		t.Fatal(err)
	}
	rw, err := CreateRecordFile(filepath.Join(dir, result.RequestsFile))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(13, 3))
	lines := 0
	write := func(rec result.Record) {
		lines++
		if err := rw.Write(&rec); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		write(result.Record{Run: "a", Index: i, Stream: true, Start: start.Add(-time.Minute), FirstVisibleS: 0.5, E2ES: 1, OutputTokens: 4})
	}
	for i := range 4 {
		write(result.Record{Run: "b", Index: -i, Warmup: true, Stream: true, Start: start, E2ES: 9})
	}
	const n = 2400
	for i := range n {
		win := 1 + i*8/n
		if i%10 == 0 {
			win = max(1, win-1-r.IntN(3))
		}
		if win == 3 {
			win = 4
		}
		at := start.Add(time.Duration(float64(win-1)+r.Float64()) * time.Second)
		fv := 0.01 + r.ExpFloat64()*0.02
		rec := result.Record{Run: "b", Index: i, Stream: i%7 != 0, Start: at, FirstVisibleS: fv, FirstTokenS: fv * 0.9,
			TTFBS: fv * 0.5, E2ES: fv + 0.5*r.Float64(), OutputTokens: 2 + r.IntN(60), Window: win}
		if rec.Stream {
			for k, ts := 0, fv; k < rec.OutputTokens; k += 2 {
				rec.Events = append(rec.Events, [2]float64{ts, 2})
				ts += 0.002 + 0.01*r.Float64()
			}
		}
		switch {
		case i%53 == 0:
			rec = result.Record{Run: "b", Index: i, Stream: true, Start: at, Error: "timeout", E2ES: 2, Window: win}
		case i%41 == 0:
			write(result.Record{Run: "b", Index: i, Stream: true, Start: at, Error: "http_status", Status: 503, Retried: true, Window: win})
		case i > n/2 && i%3 == 0:
			rec.IntendedLagS = 0.05 * r.Float64()
		}
		write(rec)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, result.RequestsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"run":"b","index":99999,"stream":tr`)
	f.Close()
	return lines
}

// recoverInMemory is Recover as it was before it streamed the records:
// every record read into memory, each run and window counted by an
// in-memory tally. It returns the results.json it writes.
func recoverInMemory(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, result.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	res, err := result.ParseResults(result.CheckpointFile, data)
	if err != nil {
		t.Fatal(err)
	}
	reqPath := filepath.Join(dir, result.RequestsFile)
	f, err := os.Open(reqPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, _, err := result.ReadRecords(reqPath, f)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Runs {
		if res.Runs[i].Incomplete {
			rebuildInMemory(&res.Runs[i], recs)
		}
	}
	res.Incomplete = true
	res.Warnings = append(res.Warnings, fmt.Sprintf("incomplete: servebench stopped mid-run; rebuilt by `servebench report` from %s and %s",
		result.CheckpointFile, result.RequestsFile))
	out := t.TempDir()
	if err := WriteResults(out, res); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(out, result.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// rebuildInMemory is the rebuild of one run as it was (see recoverInMemory).
func rebuildInMemory(run *result.Run, recs []result.Record) {
	var all Tally
	wins := make([]Tally, len(run.Windows)+1)
	nwin := len(run.Windows)
	end := run.StartedAt.Add(time.Duration(run.DurationS * float64(time.Second)))
	for i := range recs {
		r := &recs[i]
		if r.Run != run.Name || r.Warmup {
			continue
		}
		all.Add(r)
		if r.Window > 0 {
			wins[min(r.Window, nwin+1)-1].Add(r)
		}
		if e := r.Start.Add(time.Duration(r.E2ES * float64(time.Second))); e.After(end) {
			end = e
		}
	}
	run.Requests, run.OK, run.Errors, run.Retries = all.Requests, all.OK, all.ErrorsMap(), all.Retried
	run.Client = all.Client()
	run.DurationS = end.Sub(run.StartedAt).Seconds()
	run.Throughput = all.Throughput(run.DurationS)
	for k := range run.Windows {
		SetWindowClient(&run.Windows[k], &wins[k])
	}
	if rest := &wins[nwin]; rest.Requests+rest.Retried > 0 {
		w := result.Window{Index: nwin + 1, EndS: run.DurationS, Incomplete: true}
		if nwin > 0 {
			w.StartS = run.Windows[nwin-1].EndS
		}
		SetWindowClient(&w, rest)
		run.Windows = append(run.Windows, w)
	}
	run.Engine = combineWindows(run.Windows)
	if run.Engine.TTFTS != nil || run.Engine.E2ES != nil {
		run.Warnings = append(run.Warnings, fmt.Sprintf("incomplete run: engine figures are the checkpointed windows' engine deltas combined (to %.1f s of %.1f s; means only, no quantile estimates)",
			checkpointedS(run.Windows), run.DurationS))
	}
	run.Warnings = append(run.Warnings, "incomplete run: servebench stopped mid-run; counts and client figures are every complete line of requests.jsonl")
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, g[i], w[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(g), len(w))
}
