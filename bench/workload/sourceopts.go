package workload

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/engine/dist"
	"github.com/servebench/servebench/engine/option"
)

// SourceOptions are the workload-source flags of run and sweep, as given:
// an empty string (or 0) is a flag not given. Validate checks them without
// reading a file; NewSource turns them into a Source, reading the files
// they name. Each error is an option.FieldError naming the field (and
// file, line and field for files).
type SourceOptions struct {
	// ToolRounds: the runner makes each conversation a tool-calling
	// session (--tool-rounds), so --think-time applies without --turns.
	ToolRounds   int
	Prompt       string // --prompt (fixed text)
	PromptTokens int    // --prompt-tokens (0: not given)
	PromptFile   string // --prompt-file
	InputTokens  string // --input-tokens DIST
	OutputTokens string // --output-tokens DIST
	Dataset      string // --dataset sharegpt:FILE | jsonl:FILE
	Turns        string // --turns N | all
	ThinkTime    string // --think-time DIST (seconds)
	// --shared-prefix-tokens P, --prefix-groups G, --prefix-pick uniform|zipf:S
	SharedPrefixTokens, PrefixGroups int
	PrefixPick                       string
	Trace                            string  // --trace FILE
	TraceFormat                      string  // --trace-format mooncake | azure
	TraceSpeed                       float64 // --trace-speed K (0: 1)
	TraceWindow                      string  // --trace-window START,DURATION
	Seed                             int64
}

// DefaultInputTokens is the prompt length of a synthetic source given no
// --input-tokens (e.g. --turns 4 alone).
const DefaultInputTokens = 128

// maxTurns bounds --turns N.
const maxTurns = 1000

// NewSource builds the run's source from o, and the think time between
// turns. Exactly one prompt source applies: --prompt, --prompt-tokens,
// --prompt-file, a synthetic one (--input-tokens, shared prefixes,
// --turns N), --dataset or --trace; --output-tokens applies to any.
// It reads the file a source names (--prompt-file, --dataset, --trace),
// and checks what depends on its content: whether --think-time has
// sessions.
func NewSource(o SourceOptions) (Source, Dist, error) { return o.build(true) }

// Validate checks o as NewSource does, reading no file: what depends on a
// file's content (--think-time over a dataset's conversations) and the
// file itself are left to NewSource.
func (o SourceOptions) Validate() error {
	_, _, err := o.build(false)
	return err
}

// build checks o and builds its source; unless read, a source from a file
// is nil (and what depends on its content is not checked).
func (o SourceOptions) build(read bool) (Source, Dist, error) {
	if o.PromptTokens != 0 {
		if err := checkPromptTokens(o.PromptTokens); err != nil {
			return nil, Dist{}, err
		}
	}
	think, err := o.thinkTime()
	if err != nil {
		return nil, Dist{}, err
	}
	src, err := o.prompts(read)
	if err != nil {
		return nil, Dist{}, err
	}
	if o.OutputTokens != "" {
		d, err := ParseDist(o.OutputTokens)
		if err != nil {
			return nil, Dist{}, option.Errorf("OutputTokens", nil, "{OutputTokens} %v", err)
		}
		if s, ok := src.(*Synth); ok {
			s.Output = d
		} else if src != nil {
			src = &outputOverride{Source: src, dist: d, seed: o.Seed}
		}
	}
	if !think.IsZero() && src != nil && !sessions(src) && o.ToolRounds == 0 {
		return nil, Dist{}, option.Errorf("ThinkTime", nil, "expected sessions ({Turns}, or a dataset with conversations)")
	}
	return src, think, nil
}

func (o SourceOptions) thinkTime() (Dist, error) {
	if o.ThinkTime == "" {
		return Dist{}, nil
	}
	d, err := ParseDist(o.ThinkTime)
	if err != nil {
		return Dist{}, option.Errorf("ThinkTime", nil, "{ThinkTime} %v (seconds)", err)
	}
	return d, nil
}

// prompts picks the one prompt source the flags ask for; unless read, one
// from a file is checked but not read (nil).
func (o SourceOptions) prompts(read bool) (Source, error) {
	var given []promptSource
	for _, s := range promptSources {
		if s.given(o) {
			given = append(given, s)
		}
	}
	if len(given) > 1 {
		names := make([]string, len(given))
		for i, s := range given {
			names[i] = "{" + s.field + "}"
		}
		// The fields go in the reason's format, where they are named.
		return nil, option.Errorf(given[0].field, nil, strings.Join(names, ", ")+": expected at most one prompt source")
	}
	if (o.TraceFormat != "" || o.TraceSpeed != 0 || o.TraceWindow != "") && o.Trace == "" {
		return nil, option.Errorf("TraceFormat", nil, "{TraceFormat}, {TraceSpeed} and {TraceWindow}: expected {Trace} FILE too")
	}
	if len(given) == 1 {
		return given[0].build(o, read)
	}
	if o.multiTurn() || o.hasPrefixes() {
		return o.synth()
	}
	return FixedPrompt(DefaultPrompt)
}

// promptSource is one option that names where prompts come from.
type promptSource struct {
	field string // SourceOptions' field
	given func(SourceOptions) bool
	// build refuses the session and prefix flags the source cannot
	// honour, then builds it; unless read, a source from a file is nil.
	build func(o SourceOptions, read bool) (Source, error)
}

// promptSources lists the prompt sources in the order an error names them.
var promptSources = []promptSource{
	{"Prompt", func(o SourceOptions) bool { return o.Prompt != "" },
		textSource("Prompt", func(o SourceOptions, _ bool) (Source, error) { return FixedPrompt(o.Prompt) })},
	{"PromptFile", func(o SourceOptions) bool { return o.PromptFile != "" },
		textSource("PromptFile", func(o SourceOptions, read bool) (Source, error) {
			if !read {
				return nil, nil
			}
			return LoadPromptFile(o.PromptFile)
		})},
	{"Dataset", func(o SourceOptions) bool { return o.Dataset != "" }, SourceOptions.dataset},
	{"Trace", func(o SourceOptions) bool { return o.Trace != "" }, SourceOptions.trace},
	{"PromptTokens", func(o SourceOptions) bool { return o.PromptTokens > 0 }, func(o SourceOptions, _ bool) (Source, error) { return o.promptTokens() }},
	{"InputTokens", func(o SourceOptions) bool { return o.InputTokens != "" }, func(o SourceOptions, _ bool) (Source, error) { return o.synth() }},
}

// hasPrefixes says whether shared prefixes were asked for.
func (o SourceOptions) hasPrefixes() bool {
	return o.SharedPrefixTokens > 0 || o.PrefixGroups > 0 || o.PrefixPick != ""
}

// multiTurn says whether sessions of more than one turn were asked for.
func (o SourceOptions) multiTurn() bool { return o.Turns != "" && o.Turns != "1" }

// prefixesWith refuses shared prefixes over a fixed set of prompts (the
// source given by field).
func prefixesWith(field string) error {
	return option.Errorf("SharedPrefixTokens", nil, "{SharedPrefixTokens} with {"+field+"}: shared prefixes go with synthetic prompts ({InputTokens})")
}

// textSource wraps a source of given prompt text, which takes neither
// shared prefixes nor sessions.
func textSource(field string, build func(SourceOptions, bool) (Source, error)) func(SourceOptions, bool) (Source, error) {
	return func(o SourceOptions, read bool) (Source, error) {
		switch {
		case o.hasPrefixes():
			return nil, prefixesWith(field)
		case o.multiTurn():
			return nil, option.Errorf("Turns", nil, "{Turns} with {"+field+"}: sessions come from {Dataset} or synthetic prompts ({InputTokens})")
		}
		return build(o, read)
	}
}

func (o SourceOptions) dataset(read bool) (Source, error) {
	if o.hasPrefixes() {
		return nil, prefixesWith("Dataset")
	}
	if !read {
		_, _, _, err := datasetSpec(o.Dataset, o.Turns)
		return nil, err
	}
	return LoadDataset(o.Dataset, o.Turns)
}

func (o SourceOptions) trace(read bool) (Source, error) {
	switch {
	case o.Turns != "":
		return nil, option.Errorf("Turns", nil, "{Turns} with {Trace}: a trace replays single requests")
	case o.hasPrefixes():
		return nil, prefixesWith("Trace")
	}
	if !read {
		_, err := newTrace(o.Trace, o.TraceFormat, o.TraceSpeed, o.TraceWindow)
		return nil, err
	}
	return LoadTrace(o.Trace, o.TraceFormat, o.TraceSpeed, o.TraceWindow, o.Seed)
}

// promptTokens: --prompt-tokens N is --input-tokens N: alone it keeps its
// own source (and recorded text), with sessions or prefixes it is their
// length.
func (o SourceOptions) promptTokens() (Source, error) {
	if o.multiTurn() || o.hasPrefixes() {
		return o.synth()
	}
	return SyntheticPrompts(o.PromptTokens, o.Seed)
}

// synth builds the synthetic source.
func (o SourceOptions) synth() (Source, error) {
	s := &Synth{Seed: o.Seed, Turns: 1, SharedPrefixTokens: o.SharedPrefixTokens, PrefixGroups: o.PrefixGroups}
	in := o.InputTokens
	if in == "" {
		in = strconv.Itoa(DefaultInputTokens)
		if o.PromptTokens > 0 {
			in = strconv.Itoa(o.PromptTokens)
		}
	}
	var err error
	if s.Input, err = ParseDist(in); err != nil {
		return nil, option.Errorf("InputTokens", nil, "{InputTokens} %v", err)
	}
	if o.Turns != "" {
		if s.Turns, err = o.synthTurns(); err != nil {
			return nil, err
		}
	}
	if s.PrefixGroups, err = o.prefixGroups(); err != nil {
		return nil, err
	}
	if s.PrefixPick, err = prefixPick(o.PrefixPick, s.PrefixGroups); err != nil {
		return nil, err
	}
	s.Build()
	return s, nil
}

// synthTurns reads --turns N for synthetic sessions.
func (o SourceOptions) synthTurns() (int, error) {
	n, err := strconv.Atoi(o.Turns)
	if o.Turns == "all" {
		return 0, option.Errorf("Turns", nil, "{Turns} all: expected a dataset of conversations ({Dataset} sharegpt:FILE or jsonl:FILE); synthetic sessions take {Turns} N")
	}
	if err != nil || n < 1 || n > maxTurns {
		return 0, option.Errorf("Turns", o.Turns, "expected a count from 1 to %d, or all (with {Dataset})", maxTurns)
	}
	return n, nil
}

// prefixGroups checks the shared-prefix flags together and returns the
// number of prefix groups (1 when prefixes are shared but no count given).
func (o SourceOptions) prefixGroups() (int, error) {
	switch {
	case o.SharedPrefixTokens < 0 || o.SharedPrefixTokens > MaxSyntheticTokens:
		return 0, option.Errorf("SharedPrefixTokens", o.SharedPrefixTokens, "expected a token count from 1 to %d", MaxSyntheticTokens)
	case o.PrefixGroups < 0 || o.PrefixGroups > 100_000:
		return 0, option.Errorf("PrefixGroups", o.PrefixGroups, "expected a count from 1 to 100000")
	case o.PrefixGroups > 0 && o.SharedPrefixTokens == 0:
		return 0, option.Errorf("PrefixGroups", nil, "{PrefixGroups} without {SharedPrefixTokens}: expected the prefix length too")
	case o.PrefixPick != "" && o.SharedPrefixTokens == 0:
		return 0, option.Errorf("PrefixPick", nil, "{PrefixPick} without {SharedPrefixTokens}: expected shared prefixes")
	case o.SharedPrefixTokens > 0 && o.PrefixGroups == 0:
		return 1, nil
	}
	return o.PrefixGroups, nil
}

// prefixPick reads --prefix-pick over groups prefix groups; the zero Dist
// is uniform.
func prefixPick(pick string, groups int) (Dist, error) {
	switch {
	case pick == "" || pick == "uniform":
		return Dist{}, nil
	case strings.HasPrefix(pick, "zipf:"):
		v, err := dist.Number(strings.TrimPrefix(pick, "zipf:"))
		if err != nil || !(v > 1) {
			return Dist{}, option.Errorf("PrefixPick", pick, "expected zipf:S with S > 1")
		}
		return Dist{Kind: DistZipf, A: v, B: float64(groups)}, nil
	}
	return Dist{}, option.Errorf("PrefixPick", pick, "expected uniform or zipf:S")
}

// sessions reports whether src yields multi-turn conversations.
func sessions(src Source) bool {
	var w result.Workload
	src.Describe(&w)
	return w.Turns != ""
}

// outputOverride sets every turn's output length from a distribution
// (--output-tokens over a file's or dataset's own lengths).
type outputOverride struct {
	Source
	dist Dist
	seed int64
}

func (o *outputOverride) Conversation(i int) Conversation {
	c := o.Source.Conversation(i)
	var pcg rand.PCG
	pcg.Seed(uint64(o.seed)^0x0a7, uint64(i))
	rng := rand.New(&pcg) //nolint:gosec // load pattern
	turns := make([]Turn, len(c.Turns))
	copy(turns, c.Turns)
	for k := range turns {
		turns[k].OutputTokens = o.dist.Int(rng, 1, MaxSyntheticTokens)
	}
	c.Turns = turns
	return c
}

func (o *outputOverride) Describe(w *result.Workload) {
	o.Source.Describe(w)
	w.OutputTokens = o.dist.String() // drawn here, whatever the source gave
	w.OutputTokensFrom, w.OutputTokensRange = "", nil
}

// Warnings passes on the wrapped source's.
func (o *outputOverride) Warnings() []string {
	if w, ok := o.Source.(Warner); ok {
		return w.Warnings()
	}
	return nil
}
