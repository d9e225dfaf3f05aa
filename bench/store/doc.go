// Package store is the record stage of servebench's pipeline: what a run
// keeps of each request and writes to disk. NewRecord turns a client.Trace
// into a result.Record; RecordWriter appends them to requests.jsonl as
// requests complete; a run's figures are accumulated one record at a time
// (RunAcc, Tally, with Column's samples spilled to temporary files for a
// bounded run) and summarised (ClientSummary, EngineSummary); results.json
// and checkpoint.json are written atomically (WriteResults, WriteJSON), and
// Recover rebuilds results.json from a killed session's checkpoint and
// requests.jsonl.
//
// It sits below the runner (package bench, which feeds it) and above
// bench/workload: it may import bench/workload, bench/result, bench/stats,
// client, scrape and engine packages (it uses result, stats, client and
// scrape), never the runner or fleet; bench's TestLayers keeps it so.
package store
