package scrape

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseDiff is one scrape's cost in a run: parse the real vLLM V1
// exposition (51 KB, 590 lines) and diff it against a "before" snapshot.
func BenchmarkParseDiff(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "vllm_v1_metrics_qwen2.5-1.5b.txt"))
	if err != nil {
		b.Fatal(err)
	}
	before, err := Parse(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	dl, _ := Detect(before)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		after, err := Parse(bytes.NewReader(raw))
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := Diff(before, after, dl, Filter{}).Hist(EngineTTFT); !ok {
			b.Fatal("no TTFT")
		}
	}
}

// BenchmarkDiff is the delta alone, on already parsed snapshots.
func BenchmarkDiff(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "vllm_v1_metrics_qwen2.5-1.5b.txt"))
	if err != nil {
		b.Fatal(err)
	}
	before, _ := Parse(bytes.NewReader(raw))
	after, _ := Parse(bytes.NewReader(raw))
	dl, _ := Detect(before)
	b.ReportAllocs()
	for b.Loop() {
		Diff(before, after, dl, Filter{})
	}
}
