package tok

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Family is a model family's tokenizer: its pre-tokenizer, special tokens
// and chat template.
type Family int

const (
	// Qwen2 is Qwen2/Qwen2.5's tokenizer (ChatML template, numbers split
	// into single digits, no BOS token).
	Qwen2 Family = iota
	// Llama3 is Llama-3/3.1's tokenizer (header-token template, numbers in
	// groups of up to 3, <|begin_of_text|> as BOS).
	Llama3
)

// String names the family.
func (f Family) String() string {
	if f == Llama3 {
		return "llama3"
	}
	return "qwen2"
}

// special is a special (added) token: its text and the model's own id.
type special struct {
	text string
	id   uint32
}

// Special token ids as the models' tokenizer configs define them.
var specials = map[Family][]special{
	Qwen2: {
		{"<|endoftext|>", 151643}, {"<|im_start|>", 151644}, {"<|im_end|>", 151645},
	},
	Llama3: {
		{"<|begin_of_text|>", 128000}, {"<|end_of_text|>", 128001},
		{"<|start_header_id|>", 128006}, {"<|end_header_id|>", 128007},
		{"<|eom_id|>", 128008}, {"<|eot_id|>", 128009}, {"<|python_tag|>", 128010},
	},
}

// Tokenizer turns text into token ids and back. It is immutable after
// construction and safe for concurrent use; Encode, Count and Decode
// allocate only their results and per-call scratch.
type Tokenizer struct {
	family    Family
	maxDigits int
	v         *vocabulary
	specials  []special
	byID      map[uint32]string
}

// New returns the tokenizer of a model family.
func New(f Family) (*Tokenizer, error) {
	v, err := loadCL100k()
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{family: f, maxDigits: 3, v: v, specials: specials[f], byID: map[uint32]string{}}
	if f == Qwen2 {
		t.maxDigits = 1
	}
	for _, s := range t.specials {
		t.byID[s.id] = s.text
	}
	return t, nil
}

// FamilyOf picks the family for a model name (profile or served name):
// Llama3 for names containing "llama", else Qwen2 (the default profiles).
func FamilyOf(model string) Family {
	if strings.Contains(strings.ToLower(model), "llama") {
		return Llama3
	}
	return Qwen2
}

// For returns the tokenizer of a model name (see FamilyOf).
func For(model string) (*Tokenizer, error) { return New(FamilyOf(model)) }

// Family returns the tokenizer's family.
func (t *Tokenizer) Family() Family { return t.family }

// BOS returns the id of the beginning-of-sequence token the model's
// tokenizer prepends when special tokens are added, if it has one.
func (t *Tokenizer) BOS() (uint32, bool) {
	if t.family == Llama3 {
		return 128000, true
	}
	return 0, false
}

// Encode returns the token ids of text. Special tokens written in the text
// (such as <|im_start|>) become their ids, as Hugging Face tokenizers do;
// no BOS is added. Ordinary tokens carry cl100k ids, which are Llama-3's
// own ids but not Qwen2's (see the package doc).
func (t *Tokenizer) Encode(text string) []uint32 {
	return t.AppendEncode(make([]uint32, 0, len(text)/4+1), text)
}

// AppendEncode appends the token ids of text to ids and returns the result.
func (t *Tokenizer) AppendEncode(ids []uint32, text string) []uint32 {
	for len(text) > 0 {
		before, sp, rest := t.cutSpecial(text)
		ids = t.appendOrdinary(ids, before)
		if sp == nil {
			break
		}
		ids = append(ids, sp.id)
		text = rest
	}
	return ids
}

// Count returns len(Encode(text)) without keeping the ids.
func (t *Tokenizer) Count(text string) int {
	var buf [64]uint32
	n := 0
	for len(text) > 0 {
		before, sp, rest := t.cutSpecial(text)
		for i := 0; i < len(before); {
			j := nextPiece(before, i, t.maxDigits)
			n += len(t.v.encodePiece(before[i:j], buf[:0]))
			i = j
		}
		if sp == nil {
			break
		}
		n++
		text = rest
	}
	return n
}

// appendOrdinary encodes text that holds no special token.
func (t *Tokenizer) appendOrdinary(ids []uint32, text string) []uint32 {
	for i := 0; i < len(text); {
		j := nextPiece(text, i, t.maxDigits)
		ids = t.v.encodePiece(text[i:j], ids)
		i = j
	}
	return ids
}

// cutSpecial splits text at its first special token: the text before it,
// the token (nil if none) and the text after it.
func (t *Tokenizer) cutSpecial(text string) (before string, sp *special, after string) {
	for off := 0; ; {
		k := strings.Index(text[off:], "<|")
		if k < 0 {
			return text, nil, ""
		}
		k += off
		for i := range t.specials {
			if s := &t.specials[i]; strings.HasPrefix(text[k:], s.text) {
				return text[:k], s, text[k+len(s.text):]
			}
		}
		off = k + 2
	}
}

// IDError reports a token id outside the tokenizer's vocabulary.
type IDError struct {
	Index int    // position in the ids given
	ID    uint32 // the id
}

func (e *IDError) Error() string {
	return fmt.Sprintf("token id %d at index %d is not in the vocabulary", e.ID, e.Index)
}

// tokenBytes returns the bytes of one id, or false if it is not a token.
func (t *Tokenizer) tokenBytes(id uint32) (string, bool) {
	if int(id) < len(t.v.bytes) {
		return string(t.v.bytes[id]), true
	}
	s, ok := t.byID[id]
	return s, ok
}

// Decode returns the text of ids (special tokens as their text). Bytes that
// do not form valid UTF-8 become U+FFFD, as Hugging Face's decode does. An
// id outside the vocabulary is an *IDError.
func (t *Tokenizer) Decode(ids []uint32) (string, error) {
	var b strings.Builder
	for i, id := range ids {
		s, ok := t.tokenBytes(id)
		if !ok {
			return "", &IDError{Index: i, ID: id}
		}
		b.WriteString(s)
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD"), nil
}

// TokenString returns one token as Hugging Face's convert_ids_to_tokens
// shows it (what vLLM's /tokenize returns in token_strs): byte-level BPE
// text with each byte mapped to a printable rune, so " Hello" is "ĠHello".
// Special tokens are their text.
func (t *Tokenizer) TokenString(id uint32) (string, bool) {
	if s, ok := t.byID[id]; ok {
		return s, true
	}
	s, ok := t.tokenBytes(id)
	if !ok {
		return "", false
	}
	b := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		b = utf8.AppendRune(b, byteRune[s[i]])
	}
	return string(b), true
}

// byteRune is GPT-2's bytes_to_unicode table: printable bytes stand for
// themselves and the others map to runes from U+0100 on, in byte order.
var byteRune = func() (m [256]rune) {
	next := rune(256)
	for b := 0; b < 256; b++ {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}()
