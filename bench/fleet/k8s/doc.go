// Package k8s builds the Kubernetes manifests that run servebench's shards
// on many machines: an Indexed Job (batch/v1) whose pods each run one shard
// of the same workload (`servebench run --shard K/N --start-at T`), built
// from the k8s.io/api types so the output is valid by construction. It is
// part of bench/fleet and imports no servebench package.
package k8s
