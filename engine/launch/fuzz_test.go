package launch

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/iotest"
)

// FuzzParseLog feeds arbitrary logs to the parser. Properties: it never
// panics; every fact is finite and non-negative; and reading the log in
// chunks of any size (as the live reader does, one pipe read at a time) finds
// exactly the facts of a one-shot read.
func FuzzParseLog(f *testing.F) {
	// Seeds: the saved public logs, plus one line of each variant.
	paths, _ := filepath.Glob(filepath.Join(fixtureDir, "*"))
	for _, p := range paths {
		if filepath.Ext(p) == ".md" || filepath.Ext(p) == ".log" || filepath.Ext(p) == ".txt" {
			if b, err := os.ReadFile(p); err == nil && filepath.Base(p) != "SOURCES.md" {
				f.Add(b, uint16(4096))
			}
		}
	}
	for _, s := range []string{
		"vllm-1  | (EngineCore_DP0 pid=278) INFO 09-25 13:39:06 [default_loader.py:267] Loading weights took 29.38 seconds\n",
		"Model loading took 14.99 GiB memory and 7.14 seconds\r\nGPU KV cache size: 77,744 tokens\r",
		"Maximum concurrency for 4,096 tokens per request: 18.98x\ninit engine (profile) took 1.5 seconds\n",
		"[2025-03-08 12:28:51 TP0] Load weight begin.\n[2025-03-08 12:29:21 TP0] Load weight end. mem usage=15.54 GB.\n",
		"0.00.021.843 I load_tensors: x\n0.01.039.135 I llama_context: y\nllama_kv_cache: size = 1.0 MiB (  4096 cells\n",
		"Starting vLLM API server 0 on http://0.0.0.0:1\n",
	} {
		f.Add([]byte(s), uint16(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		whole := ParseLog(bytes.NewReader(data))
		n := int(chunk%257) + 1
		pieces := ParseLog(iotest.OneByteReader(bytes.NewReader(data)))
		if n > 1 {
			pieces = ParseLog(&chunkReader{data: data, n: n})
		}
		if !reflect.DeepEqual(whole, pieces) {
			t.Fatalf("facts differ with %d-byte reads:\nwhole  %+v\npieces %+v", n, whole, pieces)
		}
		for name, fa := range map[string]*Fact{
			"WeightsLoad": whole.WeightsLoad, "ModelGiB": whole.ModelGiB, "InitEngineS": whole.InitEngineS,
			"KVCacheTokens": whole.KVCacheTokens, "MaxConcurrency": whole.MaxConcurrency,
			"MaxConcurrencyTokens": whole.MaxConcurrencyTokens, "TorchCompileS": whole.TorchCompileS,
			"GraphCaptureS": whole.GraphCaptureS,
		} {
			if fa != nil && (math.IsNaN(fa.Value) || math.IsInf(fa.Value, 0) || fa.Value < 0 || fa.Line < 1) {
				t.Fatalf("%s = %+v: want a finite, non-negative value on a real line", name, fa)
			}
		}
		mf := MetricsFacts(string(data))
		if mf.WeightsLoad != nil && (math.IsNaN(mf.WeightsLoad.Value) || mf.WeightsLoad.Value < 0) {
			t.Fatalf("MetricsFacts WeightsLoad = %v", mf.WeightsLoad.Value)
		}
	})
}

// chunkReader returns data n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, os.ErrClosed // any error ends ParseLog, like EOF
	}
	k := min(r.n, len(p), len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}
