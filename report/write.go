package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/webpage"
)

// Chart file names inside a results directory.
const (
	FileTable    = "table.png"
	FileTimeline = "timeline.png"
	FileTokens   = "tokens.png"
	FileCDF      = "cdf.png"
	FileStartup  = "startup.png"
	FileSweep    = "sweep.png"
	// FileHTML is report.md as one self-contained web page.
	FileHTML = "report.html"
)

// Chart is one chart of a report: its file and the alt text report.md
// gives it.
type Chart struct {
	File  string
	Title string
	// Note, when set, says the chart is drawn from a Sample; report.md
	// writes it under the chart.
	Note string
	// render draws the PNG.
	render func() ([]byte, error)
}

// planCharts lists the charts that apply to res and recs, without drawing
// them: table when there are runs; timeline, tokens and cdf when some request succeeded;
// startup when start-up was measured; replicas when runs have per-replica
// engine figures; sweep when the runs are a sweep. recs may be a Sample s
// (nil: all records): the charts drawn from it carry its Note.
func planCharts(res *result.Results, recs []result.Record, s *Sample) []Chart {
	var cs []Chart
	note := s.Note(res)
	if len(res.Runs) > 0 { // none in a start-up only directory
		cs = append(cs, Chart{File: FileTable, Title: "The table as bars: client medians beside engine means",
			render: func() ([]byte, error) { return TableChart(res) }})
	}
	ok := false
	for _, r := range res.Runs {
		if len(measured(r.Name, recs)) > 0 {
			ok = true
		}
	}
	if ok {
		cs = append(cs,
			Chart{File: FileTimeline, Title: "Timeline of the median request per run",
				render: func() ([]byte, error) { return timelineChart(res, recs, s) }},
			Chart{File: FileTokens, Title: "Cumulative visible tokens over time", Note: s.note(res, true),
				render: func() ([]byte, error) { return tokensChart(res, recs, s) }},
			Chart{File: FileCDF, Title: "Distributions of first visible output and E2E", Note: note,
				render: func() ([]byte, error) { return cdfChart(res, recs, s) }})
	}
	if st := res.Server.Startup; st != nil && len(startupBars(st)) > 0 {
		cs = append(cs, Chart{File: FileStartup, Title: "Server start-up phases",
			render: func() ([]byte, error) { return StartupChart(res) }})
	}
	if hasReplicas(res) {
		cs = append(cs, Chart{File: FileReplicas, Title: "Engine means by replica",
			render: func() ([]byte, error) { return ReplicaChart(res) }})
	}
	if hasTurns(res, recs) {
		cs = append(cs, Chart{File: FileTurns, Title: "First output and prompt tokens by session turn", Note: note,
			render: func() ([]byte, error) { return turnsChart(res, recs, s) }})
	}
	if hasWindows(res) {
		cs = append(cs, Chart{File: FileTimeseries, Title: "Figures over time, per --interval window",
			render: func() ([]byte, error) { return TimeseriesChart(res) }})
	}
	if pairs := PathPairs(res, recs); len(pairs) > 0 && len(pairs[0].AddedE2E) > 0 {
		cs = append(cs, Chart{File: FilePath, Title: "What the path adds per request (proxied minus direct)", Note: note,
			render: func() ([]byte, error) { return pathChart(res, pairs) }})
	}
	if isSweep(res) {
		cs = append(cs, Chart{File: FileSweep, Title: "Latency and throughput against load",
			render: func() ([]byte, error) { return SweepChart(res) }})
	}
	return cs
}

// WriteSampled writes report.md, report.html and the charts into dir (which
// must exist). The output is a pure function of res, recs and dir's
// server.log (whose lines naming the slowest requests end report.md):
// `servebench report DIR` run on the saved files writes the same bytes.
// report.md is written first, so it survives a chart that fails; every
// failure is returned, joined. recs are the records ChartRecords returns
// with s, a Sample of a requests.jsonl too large to read whole (s nil:
// recs are all): the charts and sections drawn from the sample say so, and
// the slowest requests and each run's median request are s's exact ones.
func WriteSampled(dir string, res *result.Results, recs []result.Record, s *Sample) error {
	if res == nil {
		return errors.New("report: no results")
	}
	res, recs, s = shownAll(res, recs, s)
	charts := planCharts(res, recs, s)
	var md bytes.Buffer
	if err := markdown(&md, res, recs, s, charts); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var errs []error
	slow := Slowest(recs, SlowestN)
	if s != nil {
		slow = s.Slowest
	}
	if len(slow) > 0 {
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
	images := make(map[string][]byte, len(charts))
	for _, c := range charts {
		png, err := c.render()
		if err == nil {
			images[c.File] = png
			err = writeFile(filepath.Join(dir, c.File), png)
		} else {
			err = fmt.Errorf("report: %s: %w", c.File, err)
		}
		errs = append(errs, err)
	}
	errs = append(errs, writeHTML(dir, md.Bytes(), images))
	return errors.Join(errs...)
}

// writeHTML writes report.html: report.md's very content rendered as one
// self-contained page, the charts inlined, the tables sortable.
func writeHTML(dir string, md []byte, images map[string][]byte) error {
	var page bytes.Buffer
	if err := webpage.Write(&page, md, webpage.Options{Title: "servebench report", Images: images}); err != nil {
		return fmt.Errorf("report: %s: %w", FileHTML, err)
	}
	return writeFile(filepath.Join(dir, FileHTML), page.Bytes())
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
