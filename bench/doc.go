// Package bench runs workloads against an OpenAI-compatible server and turns
// what it measured into results. It sits in the middle of servebench's
// pipeline, one folder a stage:
//
//	bench/workload -> bench (Runner) -> client.Trace -> result.Record -> report
//
// Imports go down only (TestLayers checks every package of the module):
//
//	cmd -> report -> bench/fleet, bench/tune -> bench -> bench/probe, bench/history
//	    -> bench/store
//	    -> bench/workload -> bench/result, bench/stats -> client, scrape, engine
//
// bench/workload is what to send, bench the runner and the session,
// bench/store the records and figures a run keeps and writes (requests.jsonl,
// spilled tallies, results.json, checkpoints, recovery), bench/fleet the
// shards' merge (with fleet/logblock, a results directory through a log,
// and fleet/k8s, the Kubernetes Job), bench/probe the server's behaviour
// checks, bench/history the runs' history in a database (SQLite or
// PostgreSQL: trends, change points, the gate against history), bench/tune the grids of server settings (servebench tune: a
// session per treatment and repeat), bench/result the saved outputs' types and bench/stats the
// statistics they use; bench/proxytest runs real nginx and HAProxy in front of
// a server for tests (below bench/result, above client and scrape).
//
// A workload.Workload decides when requests are sent: sequential, closed-loop
// concurrency, or an open-loop rate whose Pacer (constant, Poisson, gamma)
// never waits on responses, starting workers as needed up to a bound, so
// latency is also measured from the intended send time. Prompts fill each
// request (fixed text, synthetic prompts of about N tokens, a JSONL file).
// The Runner measures one run along three seams: its sender (send.go, the
// load loop) sends them with a client.Client; its collector (collect.go)
// appends one result.Record per request to requests.jsonl as each completes
// (store.RecordWriter) and accumulates the client figures (bench/stats);
// its Reporter hears of each record and window as they come. Its engine
// source (enginesource.go) scrapes /metrics before and after the run
// (scrape), waits (bounded) until the engine has counted the requests the
// client saw succeed, and gives the engine figures (histogram deltas). The
// run's Outcome is a result.Run with its reconciliation and warnings, its
// records and its direct side.
//
// Execute is a whole session: StartServer (the bundled engine, a preset, a
// --server-cmd, or an already running URL, via engine/launch), the runs in
// order (Sweep makes one per load level), results.json, and the server
// stopped at the end. Records are kept in memory for the summaries; a run
// of N requests holds N records (each with up to client.MaxEvents events).
//
// Nothing here touches the process: callers pass a context, writers and
// options. Whole-run failures are errors (ErrInterrupted, ErrServerExited,
// ErrInvalidRun, ErrUsage) that cmd/servebench maps to exit codes; a bad
// option is an option.FieldError naming its field (Retries), which
// cmd/servebench words as the flag (--retries); a failed request is data, a
// record with its error class.
package bench
