package report

import "github.com/servebench/servebench/bench/result"

// The whole-records forms of the package's charts, plan, diagnosis and
// writer, for the tests (internal and report_test): servebench itself
// always goes through the Sample-aware ones.

func CDFChart(res *result.Results, recs []result.Record) ([]byte, error) {
	return cdfChart(res, recs, nil)
}

func TokensChart(res *result.Results, recs []result.Record) ([]byte, error) {
	return tokensChart(res, recs, nil)
}

func TimelineChart(res *result.Results, recs []result.Record) ([]byte, error) {
	return timelineChart(res, recs, nil)
}

func TurnsChart(res *result.Results, recs []result.Record) ([]byte, error) {
	return turnsChart(res, recs, nil)
}

// PlanCharts is planCharts for all of recs, shown as WriteSampled shows them.
func PlanCharts(res *result.Results, recs []result.Record) []Chart {
	res, recs, _ = shownAll(res, recs, nil)
	return planCharts(res, recs, nil)
}

// Diagnose applies the seed lesson's reasoning to run with DefaultThresholds.
func Diagnose(run result.Run) Diagnosis { return DiagnoseWith(run, DefaultThresholds) }

// DiagnoseWith is DiagnoseOn without knowing the server's dialect.
func DiagnoseWith(run result.Run, th Thresholds) Diagnosis {
	return DiagnoseOn(run, Basis{Thresholds: th})
}

// WriteAll is WriteSampled for all of recs.
func WriteAll(dir string, res *result.Results, recs []result.Record) error {
	return WriteSampled(dir, res, recs, nil)
}
