// Package workload is the first stage of servebench's pipeline, what to
// send: the Workload (sequential, closed-loop concurrency, an open-loop
// rate with its Pacer, or a trace's send times) and the Source of each
// conversation (a fixed or synthetic prompt, a prompt file, ShareGPT or
// JSONL datasets, Mooncake or Azure traces), built by NewSource from
// SourceOptions (SourceOptions.Validate checks them reading no file). Everything is decided before the run from seeds and
// inputs: conversation i is a pure function of i.
//
// It sits below the runner (package bench) and bench/store: it may import
// bench/result, bench/stats, client, scrape and engine packages (it uses the
// distribution grammar and the tokenizer), never store, the runner or
// fleet; bench's TestLayers keeps it so.
package workload
