package workload

import (
	"os"
	"strings"
	"testing"
)

// FuzzWorkloadInputs feeds arbitrary bytes to every workload input parser
// (ShareGPT, JSONL dataset, Mooncake, Azure, distributions): none may
// panic, an error names the file, and what parses is usable (every
// conversation has a turn; trace times never go backwards).
func FuzzWorkloadInputs(f *testing.F) {
	for _, name := range []string{"sharegpt.json", "chat.jsonl", "mooncake.jsonl", "azure.csv"} {
		b, err := os.ReadFile(fixtures + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("lognormal:512,256"))
	// The real tokenizer takes seconds to load under the fuzzer's coverage
	// instrumentation; the parsers are what is fuzzed here.
	saved := countTokens
	countTokens = func() func(string) int { return func(s string) int { return len(s)/4 + 1 } }
	f.Cleanup(func() { countTokens = saved })
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, sessions := range []bool{false, true} {
			d := &Dataset{File: "f"}
			if err := d.readShareGPT(data, sessions, 0); err != nil && !strings.HasPrefix(err.Error(), "f:") {
				t.Fatalf("sharegpt error %q does not name the file", err)
			}
			for _, c := range d.convs {
				if len(c.Turns) == 0 || c.Turns[0].OutputTokens < 1 {
					t.Fatalf("sharegpt conversation %+v", c)
				}
			}
		}
		d := &Dataset{File: "f"}
		if err := d.readJSONL(data, 0); err == nil {
			for _, c := range d.convs {
				if len(c.Turns) == 0 {
					t.Fatalf("jsonl conversation without turns: %+v", c)
				}
			}
		}
		for _, read := range []func([]byte, string) ([]traceEntry, error){readMooncake, readAzure} {
			es, err := read(data, "f")
			if err != nil && !strings.HasPrefix(err.Error(), "f") {
				t.Fatalf("trace error %q does not name the file", err)
			}
			for i := 1; i < len(es); i++ {
				if es[i].at < es[i-1].at || es[i].in < 1 || es[i].out < 1 {
					t.Fatalf("trace entries %+v then %+v", es[i-1], es[i])
				}
			}
		}
		if d, err := ParseDist(string(data)); err == nil && d.String() == "" {
			t.Fatalf("ParseDist(%q) gave an empty distribution", data)
		}
	})
}
