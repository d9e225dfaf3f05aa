package sim

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/servebench/servebench/engine/tok"
)

// Token counting: prompts are tokenized by the served model's tokenizer
// (engine/tok: byte-level BPE whose counts match Qwen2.5's and Llama-3's on
// English prose and code), chats after rendering the model's chat template,
// so usage.prompt_tokens is what vLLM reports for the same request:
//
//   - completions: the prompt's tokens, plus <|begin_of_text|> for Llama
//     (vLLM tokenizes completion prompts with add_special_tokens=true;
//     Qwen2.5 has no BOS); a token-ID array prompt counts its length.
//   - chat: the tokens of the template's rendering with the generation
//     prompt. Qwen2.5's ChatML adds 3 tokens per message (<|im_start|>,
//     the role, "\n" before the content; <|im_end|> and "\n" after it make
//     5 in all), 3 for "<|im_start|>assistant\n", and its default system
//     turn (21 tokens) when the messages start with no system message: a
//     one-message chat costs 29 tokens more than its content.
//
// Generated text re-tokenizes to its token count: every word of vocab is
// one token and starts with a space, so the pre-tokenizer cuts the text at
// each word and a client counting the text's tokens gets completion_tokens
// (less the EOS token of a "stop", which has no text).

// vocab is the generated text's word list. Every entry starts with a space so
// that concatenated tokens read as words; none needs JSON escaping.
var vocab = [...]string{
	" the", " model", " server", " token", " stream", " of", " and", " to",
	" a", " in", " is", " that", " for", " it", " with", " as", " on", " be",
	" latency", " batch", " cache", " first", " user", " time", " request",
	" queue", " memory", " GPU", " output", " prompt", " engine", " step",
	" we", " can", " this", " from", " by", " at", " more", " each", " when",
	" not", " only", " one", " two", " per", " second", " value", " answer",
	" measure", " number", " client", " result", " read", " write", " wait",
	" faster", " slower", " same", " because", " while", " after", " before", " then",
}

// splitmix64 is a small, well-mixed stateless hash: text and lengths are
// derived from (seed, request) by hashing rather than from shared RNG state,
// so they do not depend on the order concurrent requests arrive in.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// hashString is FNV-1a over s, mixed with seed.
func hashString(seed uint64, s string) uint64 {
	h := uint64(14695981039346656037) ^ splitmix64(seed)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return splitmix64(h)
}

// tokenText is the text of output token i of a request whose text key is key.
func tokenText(key uint64, i int) string { return vocab[tokenIndex(key, i)] }

// tokenIndex is output token i's index in vocab.
func tokenIndex(key uint64, i int) int { return int(splitmix64(key+uint64(i)) % uint64(len(vocab))) }

// vocabIDs maps vocab to the served model's token ids (each word is one
// token): the ids the prefix cache hashes for generated tokens, so that a
// reply resent in the next turn of a conversation matches the blocks its
// generation cached, as in vLLM.
func vocabIDs(t *tok.Tokenizer) ([len(vocab)]uint32, error) {
	var ids [len(vocab)]uint32
	for i, w := range vocab {
		enc := t.Encode(w)
		if len(enc) != 1 {
			return ids, fmt.Errorf("generated word %q is %d tokens for the %s tokenizer, want 1", w, len(enc), t.Family())
		}
		ids[i] = enc[0]
	}
	return ids, nil
}

// naturalLength draws the length a request would stop at by itself (EOS)
// when ignore_eos is off: an exponential distribution with mean
// meanNaturalTokens, at least 1, derived from the request's key.
func naturalLength(key uint64) int {
	u := float64(splitmix64(key^0x5bd1e995)>>11) / (1 << 53) // [0,1)
	// Inverse CDF of the exponential; -ln(1-u) via log1p for accuracy.
	n := int(-meanNaturalTokens*math.Log1p(-u)) + 1
	return n
}

const meanNaturalTokens = 256

// appendJSONString appends s to b as the inside of a JSON string (no quotes).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

// hex32 renders a 128-bit id from two hashes, like vLLM's uuid hex ids.
func hex32(a, b uint64) string {
	s := strconv.FormatUint(a, 16)
	t := strconv.FormatUint(b, 16)
	return pad16(s) + pad16(t)
}

func pad16(s string) string {
	for len(s) < 16 {
		s = "0" + s
	}
	return s
}
