// Package bench runs workloads against an OpenAI-compatible server and turns
// what it measured into results. It sits in the middle of servebench's
// pipeline:
//
//	Workload -> Runner -> client.Trace -> result.Record -> report
//
// A Workload decides when requests are sent (sequential, closed-loop
// concurrency, open-loop rate with a vegeta-style pacer). The Runner sends
// them with a client.Client, scrapes /metrics before and after each run
// (scrape), appends one result.Record per request to requests.jsonl as each
// completes, and summarises client figures (report/stats) and engine figures
// (histogram deltas) into a result.Run. Server sets up the server under test
// (the bundled engine, a preset, a command, or an already running URL via
// engine/launch). Nothing here touches the process: callers pass a context,
// writers and options; cmd/servebench maps the errors to exit codes.
package bench
