// Package scrape reads an inference server's Prometheus /metrics and turns
// it into the engine's side of a benchmark: what the server says about its
// own time to first token, end-to-end latency, queue wait, prefill, decode
// and inter-token latency over one run.
//
// In the pipeline it sits beside the client: bench takes a Snapshot before
// and after each run (Fetch or FetchAll), Diff turns the pair into a Delta,
// and the Delta answers per canonical Quantity (engine.ttft, engine.queue,
// ...). A Dialect maps those quantities onto each server's metric names
// (vLLM V1 and its renamed metrics, SGLang old and new, TGI, llama.cpp) and
// is detected from the families present.
//
// Arithmetic rules, all applied per series and then summed over label sets
// (several engine values, several models unless Filter.Model selects one):
//   - A series missing from the "before" snapshot counts as zero, since
//     servers create series on first observation.
//   - A counter, histogram count or bucket that went down, or whose
//     _created timestamp changed, is a counter reset (the server restarted):
//     the quantity is omitted and a warning says why, never a negative or
//     half-counted figure.
//   - Histogram means are delta(sum)/delta(count). Quantiles are estimates
//     interpolated linearly inside the bucket that holds the rank, the way
//     Prometheus' histogram_quantile does; they are only as fine as the
//     server's buckets.
//
// Snapshots are read-only once built and safe to share between goroutines;
// Parse, Fetch and Diff keep no state between calls.
package scrape
