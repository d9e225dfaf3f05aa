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

// Chart is one rendered PNG and the alt text report.md gives it.
type Chart struct {
	File  string
	Title string
	PNG   []byte
}

// Charts renders every chart that applies to res: table, timeline, tokens
// and cdf always (when some request succeeded), startup when start-up was
// measured, sweep when the runs are a sweep. A chart without data is left
// out; the returned error joins those reasons (the rest are still returned).
func Charts(res *result.Results, recs []result.Record) ([]Chart, error) {
	type spec struct {
		file, title string
		render      func() ([]byte, error)
	}
	specs := []spec{
		{FileTable, "The table as bars: client medians beside engine means", func() ([]byte, error) { return TableChart(res) }},
		{FileTimeline, "Timeline of the median request per run", func() ([]byte, error) { return TimelineChart(res, recs) }},
		{FileTokens, "Cumulative visible tokens over time", func() ([]byte, error) { return TokensChart(res, recs) }},
		{FileCDF, "Distributions of first visible output and E2E", func() ([]byte, error) { return CDFChart(res, recs) }},
	}
	if res.Server.Startup != nil {
		specs = append(specs, spec{FileStartup, "Server start-up phases",
			func() ([]byte, error) { return StartupChart(res.Server.Startup) }})
	}
	if isSweep(res) {
		specs = append(specs, spec{FileSweep, "Latency and throughput against load",
			func() ([]byte, error) { return SweepChart(res) }})
	}
	var out []Chart
	var errs []error
	for _, s := range specs {
		png, err := s.render()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.file, err))
			continue
		}
		out = append(out, Chart{File: s.file, Title: s.title, PNG: png})
	}
	return out, errors.Join(errs...)
}

// WriteAll writes report.md and the charts into dir (which must exist).
// The output is a pure function of res and recs: `servebench report DIR`
// run on the saved files writes the same bytes. A chart that cannot be
// drawn for lack of data is skipped (report.md then does not embed it); only
// a failure to write is an error.
func WriteAll(dir string, res *result.Results, recs []result.Record) error {
	if res == nil {
		return errors.New("report: no results")
	}
	charts, _ := Charts(res, recs) // missing data is not a failure: the chart is simply absent
	var md bytes.Buffer
	if err := Markdown(&md, res, recs, charts); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := writeFile(filepath.Join(dir, result.ReportFile), md.Bytes()); err != nil {
		return err
	}
	for _, c := range charts {
		if err := writeFile(filepath.Join(dir, c.File), c.PNG); err != nil {
			return err
		}
	}
	return nil
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
