package sim

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// Token counting. The bundled engine has no tokenizer; it uses one documented
// approximation everywhere so that a harness can build a prompt of N tokens:
//
//   - text: CountTokens(s) = ceil(len(s) in bytes / 4), the usual rule of
//     thumb for English under BPE tokenizers; "" is 0 tokens.
//   - chat: the sum over messages of CountTokens(content) + ChatMessageOverhead
//     (the template's <|im_start|>role\n ... <|im_end|>\n), plus
//     ChatReplyOverhead for the "<|im_start|>assistant\n" generation prompt.
//   - completions with a token-ID array prompt: its length.
//
// So a chat with one user message of 4*N bytes has N+7 prompt tokens, and a
// completion prompt of 4*N bytes has N.
const (
	BytesPerToken       = 4
	ChatMessageOverhead = 4
	ChatReplyOverhead   = 3
)

// CountTokens is the engine's prompt token count for a text (see the
// approximation above).
func CountTokens(s string) int { return (len(s) + BytesPerToken - 1) / BytesPerToken }

// ChatTokens is the prompt token count of a chat whose message contents are
// given, template overhead included.
func ChatTokens(contents ...string) int {
	n := ChatReplyOverhead
	for _, c := range contents {
		n += CountTokens(c) + ChatMessageOverhead
	}
	return n
}

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
func tokenText(key uint64, i int) string {
	return vocab[splitmix64(key+uint64(i))%uint64(len(vocab))]
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
