// Package logblock carries a results directory through a log: a shard that
// has no shared volume (a Kubernetes pod, `servebench run
// --results-to-log`) writes its results files to stdout as one framed,
// checksummed text block, and `servebench merge` reads the shards back
// from the saved `kubectl logs`. It sits after the run in the pipeline,
// under bench/fleet (fleet.WriteLogBlock writes a shard's directory,
// fleet.ShardFiles reads it back), and knows nothing of what the files
// hold: it imports nothing of servebench's but bench/result's file names.
//
// A block is the base64 (76 characters a line) of a gzip'd tar of the
// files, framed as
//
//	-----BEGIN SERVEBENCH RESULTS NAME-----
//	H4sIAAAAAAAA/+y9...
//	sha256:HEX bytes:N
//	-----END SERVEBENCH RESULTS NAME-----
//
// where HEX and N are the SHA-256 and length of the decoded bytes. Lines
// before and after a block are ignored, so a log may hold the run's table,
// warnings and several blocks. Lines that kubectl prefixes (--timestamps,
// --prefix) are read through: the fields before the BEGIN marker are
// dropped from every line of that block.
package logblock
