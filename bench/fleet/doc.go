// Package fleet is the last stage of a run spread over machines: shards
// (`servebench run --shard K/N`) each write a results directory, or a log
// block when they have no shared volume (WriteLogBlock), and Merge reads
// them back (directories or saved logs, ShardFiles) and merges them into
// one results directory as if one machine had sent the whole workload:
// records in completion order, client figures from the merged records,
// engine figures from the shards' saved /metrics snapshots or Prometheus.
// Its subpackages are logblock (a results directory through a log) and
// k8s (the Indexed Job that runs the shards).
//
// It sits at the top of bench: it may import the runner (package bench,
// for its engine figures and errors) and everything below it, and nothing
// in bench imports it; bench's TestLayers keeps it so.
package fleet
