// Package reporttest builds realistic, deterministic results for tests of
// report and report/compare: the seed lesson's 20x256 table (streaming and
// non-streaming), variants that break it in known ways, and a concurrency
// sweep. Client statistics are computed from the records it makes, through
// bench/stats, so results.json and requests.jsonl agree as a real run's do.
package reporttest
