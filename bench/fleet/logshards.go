package fleet

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/fleet/logblock"
	"github.com/servebench/servebench/bench/result"
)

// ShardFiles are the files of results directory dir that Merge reads:
// results.json, requests.jsonl and the saved /metrics snapshots (report.md
// and the charts are rendered again by the merge).
func ShardFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := []string{result.ResultsFile, result.RequestsFile}
	for _, e := range entries {
		if ok, _ := filepath.Match(bench.SnapshotFile("*"), e.Name()); ok && e.Type().IsRegular() {
			files = append(files, e.Name())
		}
	}
	return files, nil
}

// WriteLogBlock writes the results directory dir to w as one log block
// (bench/logblock) named after the directory, holding what Merge reads:
// the way a shard without a shared volume hands its results over.
func WriteLogBlock(w io.Writer, dir string) error {
	files, err := ShardFiles(dir)
	if err != nil {
		return err
	}
	return logblock.Write(w, filepath.Base(filepath.Clean(dir)), dir, files)
}

// shardInputs resolves Merge's inputs: a directory is a shard; a file is a
// log whose blocks are unpacked, each a shard named by the log and line it
// began at. cleanup removes what was unpacked.
func shardInputs(paths []string) (inputs []shardDir, cleanup func(), err error) {
	cleanup = func() {}
	var tmp string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			cleanup()
			return nil, nil, &result.InputError{Path: p, Err: errors.New("no such shard: expected a results directory or a log holding one")}
		}
		if fi.IsDir() {
			inputs = append(inputs, shardDir{dir: p, name: p})
			continue
		}
		if tmp == "" {
			if tmp, err = os.MkdirTemp("", "servebench-merge-"); err != nil {
				return nil, nil, err
			}
			cleanup = func() { os.RemoveAll(tmp) }
		}
		blocks, err := logblock.Extract(p, filepath.Join(tmp, fmt.Sprint(len(inputs))))
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		for _, b := range blocks {
			inputs = append(inputs, shardDir{dir: b.Dir, name: fmt.Sprintf("%s:%d (block %s)", p, b.Line, b.Name)})
		}
	}
	return inputs, cleanup, nil
}
