// Package report turns saved results (bench/result types) into what people
// read: the latency table in several formats (Table), PNG charts, report.md
// with a "where is the time going" diagnosis (DiagnoseOn), and the loader that
// lets `servebench report DIR` regenerate all of it from results.json and
// requests.jsonl alone (LoadDir, WriteSampled).
//
// It sits at the end of the pipeline: Workload -> Runner -> client.Trace ->
// result.Record -> report. Everything it writes is a pure function of the
// results, with deterministic ordering and no timestamps of its own, so a
// regenerated report is byte-for-byte the one the run wrote.
package report
