package sim

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/servebench/servebench/engine/tok"
)

// Log probabilities. The engine samples from no distribution, so it makes
// one up per output token, derived from the request's text key like the
// text itself (the same request gets the same figures): the sampled token
// is the most likely, with probability p0 in [0.35, 0.95), and alternative
// j (1..) has probability (1-p0) 2^-j times a factor in [0.5, 1), so every
// list is sorted by logprob and the probabilities sum to less than 1. The
// alternatives are other words of the engine's vocabulary, all distinct.
//
// The shapes are vLLM's (vllm/entrypoints/openai/protocol.py and
// serving_chat.py / serving_completion.py):
//
//   - chat, logprobs=true and top_logprobs=N (0..20): choices[].logprobs is
//     {"content":[{"token","logprob","bytes","top_logprobs":[N of
//     {"token","logprob","bytes"}]}]}, one entry per output token. vLLM's
//     list starts with the sampled token and goes on by rank; here the
//     sampled token is rank 1, so that is the N most likely.
//   - completions, logprobs=N (0..20): {"text_offset","token_logprobs",
//     "tokens","top_logprobs":[{token: logprob}]}, each top_logprobs map
//     holding the sampled token and the N most likely (max(N,1) entries,
//     the sampled one being the most likely); text_offset counts characters
//     of the output from 0.
//
// Streaming chunks carry the entries of their own tokens (a completions
// chunk's text_offset goes on from the previous chunks'). The last token
// of a request that stopped by itself is the end-of-turn token, which adds
// no text but has an entry, as in vLLM.

// maxLogprobs is vLLM's --max-logprobs default and OpenAI's top_logprobs
// limit: more alternatives per token are refused.
const maxLogprobs = 20

// lpToken is one token as logprobs show it, rendered for JSON once.
type lpToken struct {
	text   string
	quoted []byte // the JSON string, quotes included
	bytes  []byte // its UTF-8 bytes as a JSON array, e.g. [32,116,104,101]
}

func newLPToken(s string) lpToken {
	t := lpToken{text: s, quoted: append(appendJSONString([]byte{'"'}, s), '"'), bytes: []byte{'['}}
	for i := 0; i < len(s); i++ {
		if i > 0 {
			t.bytes = append(t.bytes, ',')
		}
		t.bytes = strconv.AppendInt(t.bytes, int64(s[i]), 10)
	}
	t.bytes = append(t.bytes, ']')
	return t
}

// vocabTokens are vocab's words as lpTokens: each is one token of the
// models' tokenizers (TestVocabIsTokens), so they are the token strings
// vLLM would show.
var vocabTokens = func() (ts [len(vocab)]lpToken) {
	for i, w := range vocab {
		ts[i] = newLPToken(w)
	}
	return ts
}()

// eosTokens is the end-of-turn token an instruct model samples to stop, per
// tokenizer family: the first eos_token_id of Qwen2.5-Instruct's and
// Llama-3.1-Instruct's generation_config.json.
var eosTokens = map[tok.Family]*lpToken{}

func init() {
	for f, s := range map[tok.Family]string{tok.Qwen2: "<|im_end|>", tok.Llama3: "<|eot_id|>"} {
		t := newLPToken(s)
		eosTokens[f] = &t
	}
}

// logprober renders one request's logprobs. It is read-only once made.
type logprober struct {
	chat bool
	top  int      // chat: top_logprobs; completions: logprobs
	eos  *lpToken // the model's end-of-turn token
}

// candidate is one token with its logprob.
type candidate struct {
	t  *lpToken
	lp float64
}

// candidates returns output token i of r followed by k alternatives, most
// likely first, in buf (k <= maxLogprobs).
func (l *logprober) candidates(buf *[maxLogprobs + 1]candidate, r *request, i, k int) []candidate {
	h := splitmix64(r.key ^ 0x6c6f6770726f6273 ^ splitmix64(uint64(i)))
	p0 := 0.35 + 0.6*unit(h)
	sampled := -1 // vocab index of the sampled token; -1 for the end-of-turn token
	if i == r.target-1 && r.endsWithEOS() {
		buf[0].t = l.eos
	} else {
		sampled = tokenIndex(r.key, i)
		buf[0].t = &vocabTokens[sampled]
	}
	buf[0].lp = math.Log(p0)
	var used [len(vocab)]bool
	if sampled >= 0 {
		used[sampled] = true
	}
	x := h
	for j := 1; j <= k; j++ {
		x = splitmix64(x)
		w := int(x % uint64(len(vocab)))
		for used[w] { // len(vocab) > maxLogprobs+1: a free word exists
			w = (w + 1) % len(vocab)
		}
		used[w] = true
		p := (1 - p0) * math.Ldexp(0.5+0.5*unit(splitmix64(x^h)), -j)
		buf[j] = candidate{&vocabTokens[w], math.Log(p)}
	}
	return buf[:k+1]
}

// unit maps a hash to [0, 1).
func unit(h uint64) float64 { return float64(h>>11) / (1 << 53) }

// appendLP appends r's logprobs for output tokens [from, to) as one JSON
// object, chat's or completions' shape. offset is the text_offset of token
// from (completions); the returned int is token to's.
func (l *logprober) appendLP(b []byte, r *request, from, to, offset int) ([]byte, int) {
	if l.chat {
		return l.appendChat(b, r, from, to), offset
	}
	return l.appendCompletion(b, r, from, to, offset)
}

func (l *logprober) appendChat(b []byte, r *request, from, to int) []byte {
	var buf [maxLogprobs + 1]candidate
	b = append(b, `{"content":[`...)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		cs := l.candidates(&buf, r, i, max(l.top-1, 0))
		b = appendChatToken(b, cs[0])
		b = append(b, `,"top_logprobs":[`...)
		for j, c := range cs[:l.top] {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(appendChatToken(b, c), '}')
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...)
}

// appendChatToken appends {"token":...,"logprob":...,"bytes":[...] without
// the closing brace: a content entry goes on with its top_logprobs.
func appendChatToken(b []byte, c candidate) []byte {
	b = append(b, `{"token":`...)
	b = append(b, c.t.quoted...)
	b = append(b, `,"logprob":`...)
	b = strconv.AppendFloat(b, c.lp, 'f', -1, 64)
	b = append(b, `,"bytes":`...)
	return append(b, c.t.bytes...)
}

func (l *logprober) appendCompletion(b []byte, r *request, from, to, offset int) ([]byte, int) {
	var buf [maxLogprobs + 1]candidate
	b = append(b, `{"text_offset":[`...)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(offset), 10)
		offset += len(l.candidates(&buf, r, i, 0)[0].t.text)
	}
	b = append(b, `],"token_logprobs":[`...)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, l.candidates(&buf, r, i, 0)[0].lp, 'f', -1, 64)
	}
	b = append(b, `],"tokens":[`...)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = append(b, l.candidates(&buf, r, i, 0)[0].t.quoted...)
	}
	b = append(b, `],"top_logprobs":[`...)
	for i := from; i < to; i++ {
		if i > from {
			b = append(b, ',')
		}
		b = append(b, '{')
		for j, c := range l.candidates(&buf, r, i, max(l.top-1, 0)) {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, c.t.quoted...)
			b = append(b, ':')
			b = strconv.AppendFloat(b, c.lp, 'f', -1, 64)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...), offset
}

// parseLogprobs checks a request's logprobs fields as vLLM does and returns
// the logprober it asks for (f is the served model's tokenizer family, for
// the end-of-turn token), nil when it asks for none.
func (req *genRequest) parseLogprobs(chat bool, f tok.Family) (*logprober, *reqError) {
	lp := &logprober{chat: chat, eos: eosTokens[f]}
	if chat {
		var on bool
		if len(req.Logprobs) > 0 && json.Unmarshal(req.Logprobs, &on) != nil {
			return nil, badRequest("logprobs", "logprobs must be a boolean for chat completions, got %s", req.Logprobs)
		}
		if req.TopLogprobs != nil {
			lp.top = *req.TopLogprobs
		}
		switch {
		case lp.top < 0:
			return nil, badRequest("top_logprobs", "`top_logprobs` must be a positive value.")
		case lp.top > 0 && !on:
			return nil, badRequest("top_logprobs", "when using `top_logprobs`, `logprobs` must be set to true.")
		case lp.top > maxLogprobs:
			return nil, badRequest("top_logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d", lp.top, maxLogprobs)
		case !on:
			return nil, nil
		}
		return lp, nil
	}
	var n *int
	if len(req.Logprobs) > 0 && json.Unmarshal(req.Logprobs, &n) != nil {
		return nil, badRequest("logprobs", "logprobs must be an integer for completions, got %s", req.Logprobs)
	}
	switch {
	case n == nil:
		return nil, nil
	case *n < 0:
		return nil, badRequest("logprobs", "`logprobs` must be a positive value.")
	case *n > maxLogprobs:
		return nil, badRequest("logprobs", "Requested sample logprobs of %d, which is greater than max allowed: %d", *n, maxLogprobs)
	}
	lp.top = *n
	return lp, nil
}
