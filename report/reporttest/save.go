package reporttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/servebench/servebench/bench/result"
)

// Save writes res and recs into dir as a run does: results.json indented,
// requests.jsonl one record per line.
func Save(dir string, res *result.Results, recs []result.Record) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, result.ResultsFile), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var lines bytes.Buffer
	enc := json.NewEncoder(&lines)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("encoding record %d: %w", i, err)
		}
	}
	return os.WriteFile(filepath.Join(dir, result.RequestsFile), lines.Bytes(), 0o644)
}

// Buffered is the seed's streaming run behind a buffering proxy: the engine
// makes the first token after 0.03 s, the client sees text after about 1.2 s.
func Buffered() RunSpec {
	return RunSpec{Name: "streaming", Stream: true, N: 20, Tokens: 256, FirstVisible: 0.026, PerToken: 0.0150,
		Buffered: 80, EngineTTFT: 0.03}
}

// Queued is a streaming run on an overloaded server: 2 s of queue wait in a
// 2.1 s engine TTFT.
func Queued() RunSpec {
	return RunSpec{Name: "streaming", Stream: true, N: 20, Tokens: 256, FirstVisible: 2.1, PerToken: 0.0150,
		EngineTTFT: 2.1, EngineQueue: 2.0}
}
