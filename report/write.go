package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/bench/result"
)

// Chart file names inside a results directory.
const (
	FileTable    = "table.png"
	FileTimeline = "timeline.png"
	FileTokens   = "tokens.png"
	FileCDF      = "cdf.png"
	FileStartup  = "startup.png"
	FileSweep    = "sweep.png"
)

// Chart is one chart of a report: its file and the alt text report.md
// gives it.
type Chart struct {
	File  string
	Title string
	// render draws the PNG.
	render func() ([]byte, error)
}

// PlanCharts lists the charts that apply to res and recs, without drawing
// them: table when there are runs; timeline, tokens and cdf when some request succeeded;
// startup when start-up was measured; replicas when runs have per-replica
// engine figures; sweep when the runs are a sweep.
func PlanCharts(res *result.Results, recs []result.Record) []Chart {
	var cs []Chart
	if len(res.Runs) > 0 { // none in a start-up only directory
		cs = append(cs, Chart{FileTable, "The table as bars: client medians beside engine means",
			func() ([]byte, error) { return TableChart(res) }})
	}
	ok := false
	for _, r := range res.Runs {
		if len(measured(r.Name, recs)) > 0 {
			ok = true
		}
	}
	if ok {
		cs = append(cs,
			Chart{FileTimeline, "Timeline of the median request per run",
				func() ([]byte, error) { return TimelineChart(res, recs) }},
			Chart{FileTokens, "Cumulative visible tokens over time",
				func() ([]byte, error) { return TokensChart(res, recs) }},
			Chart{FileCDF, "Distributions of first visible output and E2E",
				func() ([]byte, error) { return CDFChart(res, recs) }})
	}
	if st := res.Server.Startup; st != nil && len(startupBars(st)) > 0 {
		cs = append(cs, Chart{FileStartup, "Server start-up phases",
			func() ([]byte, error) { return StartupChart(res) }})
	}
	if hasReplicas(res) {
		cs = append(cs, Chart{FileReplicas, "Engine means by replica",
			func() ([]byte, error) { return ReplicaChart(res) }})
	}
	if hasTurns(res, recs) {
		cs = append(cs, Chart{FileTurns, "First output and prompt tokens by session turn",
			func() ([]byte, error) { return TurnsChart(res, recs) }})
	}
	if hasWindows(res) {
		cs = append(cs, Chart{FileTimeseries, "Figures over time, per --interval window",
			func() ([]byte, error) { return TimeseriesChart(res) }})
	}
	if isSweep(res) {
		cs = append(cs, Chart{FileSweep, "Latency and throughput against load",
			func() ([]byte, error) { return SweepChart(res) }})
	}
	return cs
}

// WriteAll writes report.md and the charts into dir (which must exist).
// The output is a pure function of res, recs and dir's server.log (whose
// lines naming the slowest requests end report.md): `servebench report DIR`
// run on the saved files writes the same bytes. report.md is written first,
// so it survives a chart that fails; every failure is returned, joined.
func WriteAll(dir string, res *result.Results, recs []result.Record) error {
	if res == nil {
		return errors.New("report: no results")
	}
	charts := PlanCharts(res, recs)
	var md bytes.Buffer
	if err := Markdown(&md, res, recs, charts); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var errs []error
	if slow := Slowest(recs, SlowestN); len(slow) > 0 {
		ids := make([]string, len(slow))
		for i, r := range slow {
			ids[i] = r.RequestID
		}
		logs, err := LogLinesNaming(filepath.Join(dir, result.ServerLog), ids)
		errs = append(errs, err, WriteSlowest(&md, slow, logs))
	}
	if err := writeFile(filepath.Join(dir, result.ReportFile), md.Bytes()); err != nil {
		return err
	}
	for _, c := range charts {
		png, err := c.render()
		if err == nil {
			err = writeFile(filepath.Join(dir, c.File), png)
		} else {
			err = fmt.Errorf("report: %s: %w", c.File, err)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// writeFile replaces path via a temporary file, so a reader never sees half
// a chart and an interrupted write leaves the old file.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: writing %s: %w", path, err)
	}
	return nil
}
