package workload

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/option"
)

// TestSynthSource: conversation i is the same every time, lengths follow
// the distributions, prefix groups are shared texts, turns make sessions.
func TestSynthSource(t *testing.T) {
	src, think, err := NewSource(SourceOptions{InputTokens: "uniform:10-20", OutputTokens: "lognormal:50,20",
		SharedPrefixTokens: 30, PrefixGroups: 4, PrefixPick: "zipf:1.5", Turns: "3", ThinkTime: "uniform:0-0.5", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if think.String() != "uniform:0-0.5" {
		t.Errorf("think time %v", think)
	}
	groups := map[int]int{}
	prefixOf := map[int]string{}
	for i := range 400 {
		c := src.Conversation(i)
		again := src.Conversation(i)
		if c.Group != again.Group || c.Turns[1].Tokens != again.Turns[1].Tokens || c.Turns[2].OutputTokens != again.Turns[2].OutputTokens {
			t.Fatalf("conversation %d not reproducible", i)
		}
		if len(c.Turns) != 3 || c.Session == "" {
			t.Fatalf("conversation %d: %d turns, session %q", i, len(c.Turns), c.Session)
		}
		if c.Group < 1 || c.Group > 4 || len(strings.Fields(c.System)) != 30 {
			t.Fatalf("conversation %d: group %d, prefix of %d words", i, c.Group, len(strings.Fields(c.System)))
		}
		if p, ok := prefixOf[c.Group]; ok && p != c.System {
			t.Fatalf("group %d has two prefixes", c.Group)
		}
		prefixOf[c.Group] = c.System
		groups[c.Group]++
		for _, tu := range c.Turns {
			if tu.Tokens < 10 || tu.Tokens > 20 || tu.OutputTokens < 1 {
				t.Fatalf("turn lengths %d in, %d out", tu.Tokens, tu.OutputTokens)
			}
		}
	}
	if len(prefixOf) != 4 {
		t.Errorf("%d distinct groups used, want 4", len(prefixOf))
	}
	if groups[1] <= groups[4] {
		t.Errorf("zipf pick: group 1 used %d times, group 4 %d: want group 1 the most", groups[1], groups[4])
	}
	var w result.Workload
	src.Describe(&w)
	if w.Source != SourceSynthetic || w.InputTokens != "uniform:10-20" || w.OutputTokens != "lognormal:50,20" ||
		w.Turns != "3" || w.SharedPrefixTokens != 30 || w.PrefixGroups != 4 || w.PrefixPick != "zipf:1.5,4" {
		t.Errorf("workload block %+v", w)
	}
}

func TestNewSourceRefuses(t *testing.T) {
	for _, tc := range []struct {
		o    SourceOptions
		want string
	}{
		{SourceOptions{InputTokens: "lognormal:5"}, `InputTokens "lognormal:5": expected lognormal:MEAN,STD`},
		{SourceOptions{OutputTokens: "uniform:9-1"}, "OutputTokens"},
		{SourceOptions{Turns: "0"}, `Turns "0"`},
		{SourceOptions{Turns: "all"}, "Turns all: expected a dataset"},
		{SourceOptions{ThinkTime: "2"}, "ThinkTime: expected sessions"},
		{SourceOptions{ThinkTime: "x", Turns: "2"}, `ThinkTime "x"`},
		{SourceOptions{PrefixGroups: 3}, "PrefixGroups without SharedPrefixTokens"},
		{SourceOptions{SharedPrefixTokens: 8, PrefixPick: "zipf:0.5"}, `PrefixPick "zipf:0.5": expected zipf:S with S > 1`},
		{SourceOptions{Prompt: "x", InputTokens: "5"}, "Prompt, InputTokens: expected at most one"},
		{SourceOptions{Prompt: "x", Turns: "2"}, "Turns with Prompt"},
		{SourceOptions{PromptFile: "f", SharedPrefixTokens: 2}, "SharedPrefixTokens with PromptFile"},
	} {
		_, _, err := NewSource(tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSource(%+v) error %v, want %q", tc.o, err, tc.want)
		}
		if fe := (*option.FieldError)(nil); !errors.As(err, &fe) || !strings.HasPrefix(tc.want, fe.Field) {
			t.Errorf("NewSource(%+v) error %v: want an option.FieldError of the field it names first", tc.o, err)
		}
		if verr := tc.o.Validate(); verr == nil || verr.Error() != err.Error() {
			t.Errorf("Validate(%+v) error %v, want NewSource's %v", tc.o, verr, err)
		}
	}
	// --prompt-tokens alone keeps its historical source; with --turns it is the length.
	if src, _, err := NewSource(SourceOptions{PromptTokens: 40}); err != nil || src.(*Prompts).Kind != PromptSynthetic {
		t.Errorf("--prompt-tokens alone: %T %v", src, err)
	}
	if src, _, err := NewSource(SourceOptions{PromptTokens: 40, Turns: "2"}); err != nil || src.Conversation(0).Turns[1].Tokens != 40 {
		t.Errorf("--prompt-tokens with --turns: %v", err)
	}
}

// TestValidateReadsNoFile: the options check names no missing file, which
// NewSource then reads and refuses, naming the option; the flag errors of
// a file source are Validate's too.
func TestValidateReadsNoFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		o     SourceOptions
		field string
	}{
		{SourceOptions{PromptFile: missing, OutputTokens: "8"}, "PromptFile"},
		{SourceOptions{Dataset: "jsonl:" + missing + ".jsonl", Turns: "all", ThinkTime: "1"}, "Dataset"},
		{SourceOptions{Trace: missing + ".csv", TraceSpeed: 2, TraceWindow: "1,2"}, "Trace"},
	} {
		if err := tc.o.Validate(); err != nil {
			t.Errorf("Validate(%+v): %v: want no error (it reads no file)", tc.o, err)
		}
		_, _, err := NewSource(tc.o)
		if fe := (*option.FieldError)(nil); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("NewSource(%+v) error %v: want the missing file, naming %s", tc.o, err, tc.field)
		}
	}
	for _, tc := range []struct {
		o    SourceOptions
		want string
	}{
		{SourceOptions{Dataset: missing}, "expected sharegpt:FILE or jsonl:FILE"},
		{SourceOptions{Dataset: "jsonl:" + missing, Turns: "0"}, `Turns "0"`},
		{SourceOptions{Trace: missing}, "cannot tell from the name"},
		{SourceOptions{Trace: missing, TraceFormat: "x"}, `TraceFormat "x"`},
		{SourceOptions{Trace: missing + ".csv", TraceSpeed: -1}, "TraceSpeed -1"},
		{SourceOptions{Trace: missing + ".csv", TraceWindow: "x"}, `TraceWindow "x"`},
	} {
		if err := tc.o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) error %v, want %q", tc.o, err, tc.want)
		}
	}
}

// BenchmarkSyntheticText generates 1,000-token prompts: the cost per word
// of the one text generator every generated prompt goes through.
func BenchmarkSyntheticText(b *testing.B) {
	buf := make([]byte, 0, 8000)
	i := uint64(0)
	for b.Loop() {
		buf = SyntheticText(buf[:0], 1000, 1, i)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/word")
}
