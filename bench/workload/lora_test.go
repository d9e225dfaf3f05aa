package workload

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestLoRAMix: each distribution's shares over many conversations, the
// same picks for the same seed, and bad specs named.
func TestLoRAMix(t *testing.T) {
	cases := []struct {
		spec, dist string
		want       []float64
	}{
		{"a,b,c,d", "", []float64{0.25, 0.25, 0.25, 0.25}},         // uniform by default
		{"a:3,b:1", "", []float64{0.75, 0.25}},                     // weights imply weighted
		{"a:3,b:1", "uniform", []float64{0.5, 0.5}},                // uniform ignores weights
		{"a,b,c", "zipf", []float64{6.0 / 11, 3.0 / 11, 2.0 / 11}}, // 1, 1/2, 1/3
		{"a,b", "zipf:2", []float64{0.8, 0.2}},                     // 1, 1/4
	}
	for _, c := range cases {
		m, err := ParseLoRA(c.spec, c.dist)
		if err != nil {
			t.Fatalf("%s %s: %v", c.spec, c.dist, err)
		}
		const n = 20000
		count := map[string]int{}
		for i := range n {
			count[m.Pick(7, i)]++
		}
		for k, name := range m.Names {
			if got := float64(count[name]) / n; math.Abs(got-c.want[k]) > 0.02 {
				t.Errorf("%s %s: %s share %.3f, want %.3f", c.spec, c.dist, name, got, c.want[k])
			}
		}
		if m.Pick(7, 123) != m.Pick(7, 123) {
			t.Errorf("%s: picks differ for the same seed", c.spec)
		}
	}
	for _, bad := range [][2]string{{"a,,b", ""}, {"a:0", ""}, {"a:x", ""}, {"a", "pareto"}, {"a", "zipf:-1"}} {
		if _, err := ParseLoRA(bad[0], bad[1]); err == nil {
			t.Errorf("--lora %q --lora-dist %q accepted", bad[0], bad[1])
		}
	}
}

// TestDatasetLoRA: a JSONL line's "lora" names its conversation's adapter;
// a session takes its first line's.
func TestDatasetLoRA(t *testing.T) {
	f := filepath.Join(t.TempDir(), "d.jsonl")
	lines := `{"prompt":"a","lora":"sql"}` + "\n" + `{"prompt":"b"}` + "\n" +
		`{"prompt":"c","session":"s","lora":"chat"}` + "\n" + `{"prompt":"d","session":"s"}` + "\n"
	if err := os.WriteFile(f, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := LoadDataset("jsonl:"+f, "all")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{d.Conversation(0).LoRA, d.Conversation(1).LoRA, d.Conversation(2).LoRA}
	if got[0] != "sql" || got[1] != "" || got[2] != "chat" || len(d.Conversation(2).Turns) != 2 {
		t.Errorf("adapters %q, session turns %d", got, len(d.Conversation(2).Turns))
	}
}
