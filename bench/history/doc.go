// Package history keeps benchmark results across runs in a database, so a
// nightly job can see a trend, find the commit where a figure moved, and
// gate a new run against what many earlier runs of the same workload did.
//
// It sits after the session in the pipeline: Workload -> Runner ->
// result.Results -> Entries (one per run: its summary, its run-level
// statistics and the metadata that says where it came from) -> Store.
// Readers (history show, the history gate) query a Store back into Entries
// and hand their series to bench/stats.
//
// One schema, two engines: an SQLite file (modernc.org/sqlite, pure Go) by
// default and PostgreSQL (pgx's database/sql driver) for a team, with the
// same versioned migrations (migrations/*.sql). A Store is safe for
// concurrent use, and several processes may write one database at once:
// every Add is one transaction, and SQLite runs in WAL mode with a busy
// timeout so a second writer waits instead of failing.
package history
