package workload

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/servebench/servebench/client"
	"github.com/servebench/servebench/engine/option"
)

// Prompt kinds, as recorded in result.Workload.PromptKind.
const (
	PromptFixed     = "fixed"
	PromptSynthetic = "synthetic"
	PromptFile      = "file"
)

// DefaultPrompt is the fixed prompt used when none is given: a short chat
// prompt, as in the seed lesson's measurement. engine/perf is calibrated for
// it (perf.CalibrationPrompt, held equal by TestDefaultPromptCalibrated).
const DefaultPrompt = "Write a short story about a lighthouse keeper who finds a message in a bottle."

// MaxPromptFileLine bounds one line of a prompt file (16 MiB).
const MaxPromptFileLine = 16 << 20

// Prompts yields the prompt of each request. It is immutable after
// construction and safe for concurrent use.
type Prompts struct {
	Kind   string // PromptFixed, PromptSynthetic or PromptFile
	Tokens int    // PromptSynthetic: approximate prompt tokens
	File   string // PromptFile: path
	seed   int64
	sha256 string // PromptFile: the file's hex SHA-256
	items  []promptItem
}

type promptItem struct {
	Prompt   string
	Messages []client.Message
}

// FixedPrompt returns Prompts that send text with every request.
func FixedPrompt(text string) (*Prompts, error) {
	if strings.TrimSpace(text) == "" {
		return nil, option.Errorf("Prompt", "", "expected a non-empty prompt")
	}
	return &Prompts{Kind: PromptFixed, items: []promptItem{{Prompt: text}}}, nil
}

// SyntheticWords are common English words that the BPE tokenizers of
// Llama 3, Qwen 2.5 and GPT-4 each encode as one token when preceded by a
// space. A synthetic prompt of N tokens is N of them, so its true length is
// N plus the chat template's few tokens (about 10-20 with chat, 0-1 with
// completions), within a few percent for other tokenizers.
var SyntheticWords = strings.Fields(`the of and to in is was for on that with as by at from
his her they which this be are have not had but were one all their there been has when who
will more no if out so up said what its about into than them can only other new some time
could these two may then do first any my now such like our over man me even most made after
also did many before must through back years where much your way well down should because each
just those people how too little state good very make world still own see men work long get
here between both life being under never day same another know while last might us great old
year off come since against go came right used take three`)

// SyntheticPrompts returns Prompts of about tokens tokens each. Each request
// gets different words (seeded by seed and its index) so a server's prefix
// cache cannot serve one request from another's prompt.
func SyntheticPrompts(tokens int, seed int64) (*Prompts, error) {
	if err := checkPromptTokens(tokens); err != nil {
		return nil, err
	}
	return &Prompts{Kind: PromptSynthetic, Tokens: tokens, seed: seed}, nil
}

func checkPromptTokens(tokens int) error {
	if tokens < 1 || tokens > MaxSyntheticTokens {
		return option.Errorf("PromptTokens", tokens, "expected a token count from 1 to %d", MaxSyntheticTokens)
	}
	return nil
}

// LoadPromptFile reads a JSONL file of {"prompt": "..."} or
// {"messages": [{"role": ..., "content": ...}]} lines. Blank lines are
// skipped; errors name file:line.
func LoadPromptFile(path string) (*Prompts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, option.Wrap("PromptFile", nil, err)
	}
	defer f.Close()
	h := sha256.New()
	items, err := parsePromptLines(io.TeeReader(f, h), path)
	if err != nil {
		return nil, err
	}
	return &Prompts{Kind: PromptFile, File: path, items: items, sha256: hex.EncodeToString(h.Sum(nil))}, nil
}

func parsePromptLines(r io.Reader, name string) ([]promptItem, error) {
	var items []promptItem
	err := eachLine(r, name, func(line int, text string) error {
		it, err := parsePromptLine(text)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no prompts (expected JSONL lines of {\"prompt\": ...} or {\"messages\": [...]})", name)
	}
	return items, nil
}

// eachLine calls fn with each non-blank line of a JSONL input, trimmed,
// and its 1-based number; lines are at most MaxPromptFileLine bytes. It
// stops at fn's first error; a read error names name and the line.
func eachLine(r io.Reader, name string, fn func(line int, text string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxPromptFileLine)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			// Windows editors start UTF-8 files with a byte order mark.
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		if text = strings.TrimSpace(text); text == "" {
			continue
		}
		if err := fn(line, text); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return nil
}

// promptRoles are the chat roles the OpenAI API takes.
var promptRoles = []string{"system", "user", "assistant", "tool", "developer"}

// parsePromptLine reads one non-blank line of a prompt file.
func parsePromptLine(text string) (promptItem, error) {
	const want = `expected {"prompt": "..."} or {"messages": [...]}`
	if text[0] != '{' {
		return promptItem{}, fmt.Errorf("expected a JSON object %s, got %s", strings.TrimPrefix(want, "expected "), jsonKind(text[0]))
	}
	var raw struct {
		Prompt   *string `json:"prompt"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(text), &raw); err != nil {
		return promptItem{}, fmt.Errorf("%v (%s)", err, want)
	}
	switch {
	case raw.Prompt != nil && raw.Messages != nil:
		return promptItem{}, errors.New(`both "prompt" and "messages": expected one of them`)
	case raw.Prompt != nil:
		if *raw.Prompt == "" {
			return promptItem{}, errors.New(`empty "prompt"`)
		}
		return promptItem{Prompt: *raw.Prompt}, nil
	case len(raw.Messages) == 0:
		return promptItem{}, errors.New(want)
	}
	msgs := make([]client.Message, len(raw.Messages))
	for i, m := range raw.Messages {
		switch {
		case m.Role == "":
			return promptItem{}, fmt.Errorf("messages[%d] has no \"role\"", i)
		case !slices.Contains(promptRoles, m.Role):
			return promptItem{}, fmt.Errorf("messages[%d] role %q: expected one of %s", i, m.Role, strings.Join(promptRoles, ", "))
		}
		msgs[i].Role = m.Role
		c := bytes.TrimSpace(m.Content)
		switch {
		case len(c) == 0 || string(c) == "null":
		case c[0] == '"':
			if err := json.Unmarshal(c, &msgs[i].Content); err != nil {
				return promptItem{}, fmt.Errorf("messages[%d].content: %v", i, err)
			}
		default:
			return promptItem{}, fmt.Errorf("messages[%d].content is %s: expected a string (multi-part content is not supported)", i, jsonKind(c[0]))
		}
	}
	return promptItem{Messages: msgs}, nil
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '{':
		return "an object"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	}
	return fmt.Sprintf("%q, not JSON", c)
}

// Len is the number of distinct prompts (0 for synthetic: unbounded).
func (p *Prompts) Len() int { return len(p.items) }

// SyntheticText appends to dst a prompt text of tokens tokens and returns
// it: tokens words of SyntheticWords separated by single spaces, drawn by a
// PCG generator seeded with (seed, stream). It is the one place that turns
// a token count into text (synthetic prompts, shared prefixes, trace
// blocks), so making prompts token-exact for a server is a change here.
// The same (seed, stream) always gives the same words, and a shorter text
// is a prefix of a longer one: trace blocks cut short stay shared.
func SyntheticText(dst []byte, tokens int, seed, stream uint64) []byte {
	var pcg rand.PCG
	pcg.Seed(seed, stream)
	n := uint64(len(SyntheticWords))
	for k := 0; k < tokens; {
		// Four words per 64 random bits: word = 16 bits scaled to the list
		// (Lemire's multiply-shift; a bias of len/65536 is nothing for
		// filler text), several times faster than a rand.IntN per word.
		x := pcg.Uint64()
		for j := 0; j < 4 && k < tokens; j, k = j+1, k+1 {
			if k > 0 {
				dst = append(dst, ' ')
			}
			dst = append(dst, SyntheticWords[(x&0xffff)*n>>16]...)
			x >>= 16
		}
	}
	return dst
}
