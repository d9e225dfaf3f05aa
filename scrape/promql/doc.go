// Package promql reads the engine's side of a benchmark from a Prometheus
// server instead of scraping /metrics itself: what production fleets have,
// with the replicas told apart by their instance (or pod) label.
//
// It uses the scrape package's dialects for the metric names (one name table
// for both sources) and answers with the same scrape.Delta, one per replica
// and their sum, so bench summarises both sources alike.
//
// Window [from, to] of a run is read as follows. Prometheus only knows the
// counters at its scrapes, so the window is aligned per replica to the last
// scrape at or before from and the first scrape after to (Source waits for
// it, bounded by Options.Wait, default 3 scrape intervals from the targets
// API). increase() over exactly that range, evaluated at that scrape with
// the @ modifier, is then the exact change without extrapolation (Prometheus
// 2 ranges include both ends; for Prometheus 3, whose ranges are left-open,
// the range is 1 ms longer and increase() extrapolates over that 1 ms).
// increase() handles counter resets itself; resets() reports them.
//
// Every query adds Options.Selector's matchers, and queries are kept with
// the Window so a result says exactly what was asked.
package promql
