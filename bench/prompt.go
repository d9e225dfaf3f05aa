package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/servebench/servebench/client"
)

// Prompt kinds, as recorded in result.Workload.PromptKind.
const (
	PromptFixed     = "fixed"
	PromptSynthetic = "synthetic"
	PromptFile      = "file"
)

// DefaultPrompt is the fixed prompt used when none is given: a short chat
// prompt, as in the seed lesson's measurement.
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
	items  []promptItem
}

type promptItem struct {
	Prompt   string
	Messages []client.Message
}

// FixedPrompt returns Prompts that send text with every request.
func FixedPrompt(text string) (*Prompts, error) {
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("--prompt \"\": expected a non-empty prompt")
	}
	return &Prompts{Kind: PromptFixed, items: []promptItem{{Prompt: text}}}, nil
}

// syntheticWords are common English words that the BPE tokenizers of
// Llama 3, Qwen 2.5 and GPT-4 each encode as one token when preceded by a
// space. A synthetic prompt of N tokens is N of them, so its true length is
// N plus the chat template's few tokens (about 10-20 with chat, 0-1 with
// completions), within a few percent for other tokenizers.
var syntheticWords = strings.Fields(`the of and to in is was for on that with as by at from
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
	if tokens < 1 || tokens > 10_000_000 {
		return nil, fmt.Errorf("--prompt-tokens %d: expected a token count from 1 to 10000000", tokens)
	}
	return &Prompts{Kind: PromptSynthetic, Tokens: tokens, seed: seed}, nil
}

// LoadPromptFile reads a JSONL file of {"prompt": "..."} or
// {"messages": [{"role": ..., "content": ...}]} lines. Blank lines are
// skipped; errors name file:line.
func LoadPromptFile(path string) (*Prompts, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--prompt-file: %w", err)
	}
	defer f.Close()
	items, err := parsePromptLines(f, path)
	if err != nil {
		return nil, err
	}
	return &Prompts{Kind: PromptFile, File: path, items: items}, nil
}

func parsePromptLines(r io.Reader, name string) ([]promptItem, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxPromptFileLine)
	var items []promptItem
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var raw struct {
			Prompt   *string          `json:"prompt"`
			Messages []client.Message `json:"messages"`
		}
		if err := json.Unmarshal([]byte(text), &raw); err != nil {
			return nil, fmt.Errorf("%s:%d: %v (expected {\"prompt\": \"...\"} or {\"messages\": [...]})", name, line, err)
		}
		switch {
		case raw.Prompt != nil && raw.Messages != nil:
			return nil, fmt.Errorf("%s:%d: both \"prompt\" and \"messages\": expected one of them", name, line)
		case raw.Prompt != nil:
			if *raw.Prompt == "" {
				return nil, fmt.Errorf("%s:%d: empty \"prompt\"", name, line)
			}
			items = append(items, promptItem{Prompt: *raw.Prompt})
		case len(raw.Messages) > 0:
			for i, m := range raw.Messages {
				if m.Role == "" {
					return nil, fmt.Errorf("%s:%d: messages[%d] has no \"role\"", name, line, i)
				}
			}
			items = append(items, promptItem{Messages: raw.Messages})
		default:
			return nil, fmt.Errorf("%s:%d: expected {\"prompt\": \"...\"} or {\"messages\": [...]}", name, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no prompts (expected JSONL lines of {\"prompt\": ...} or {\"messages\": [...]})", name)
	}
	return items, nil
}

// Len is the number of distinct prompts (0 for synthetic: unbounded).
func (p *Prompts) Len() int { return len(p.items) }

// Fill sets the prompt of request index i on req for its endpoint: chat gets
// messages (a plain prompt becomes one user message), completions gets a
// prompt (messages are joined by newlines). File prompts are used in order,
// cycling.
func (p *Prompts) Fill(req *client.Request, i int) {
	var it promptItem
	if p.Kind == PromptSynthetic {
		it = promptItem{Prompt: p.synthetic(i)}
	} else {
		it = p.items[i%len(p.items)]
	}
	if req.Endpoint == EndpointCompletions {
		req.Messages = nil
		req.Prompt = it.Prompt
		if it.Messages != nil {
			parts := make([]string, len(it.Messages))
			for j, m := range it.Messages {
				parts[j] = m.Content
			}
			req.Prompt = strings.Join(parts, "\n")
		}
		return
	}
	req.Prompt = ""
	req.Messages = it.Messages
	if it.Messages == nil {
		req.Messages = []client.Message{{Role: "user", Content: it.Prompt}}
	}
}

func (p *Prompts) synthetic(i int) string {
	rng := rand.New(rand.NewPCG(uint64(p.seed), uint64(i))) //nolint:gosec // filler text
	var b strings.Builder
	b.Grow(p.Tokens * 6)
	for k := 0; k < p.Tokens; k++ {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(syntheticWords[rng.IntN(len(syntheticWords))])
	}
	return b.String()
}
