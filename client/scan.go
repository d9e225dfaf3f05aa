package client

import (
	"bytes"
	"slices"
	"unicode/utf8"
)

// scanner is the allocation-free JSON walker behind ChunkDecoder. It
// validates everything it passes over (so it never accepts what
// encoding/json rejects) and returns errDecline whenever encoding/json
// might read the input differently; see ChunkDecoder.
type scanner struct {
	b   []byte
	i   int
	out []byte // unescaped strings, capacity >= len(b) so it never reallocates
}

// maxScanDepth bounds recursion; deeper input goes to encoding/json.
const maxScanDepth = 256

// Interesting keys per object level; a key that matches one only when case
// is ignored makes the scanner decline (encoding/json folds case).
var (
	topKeys    = []string{"choices", "usage", "error"}
	choiceKeys = []string{"delta", "message", "text", "finish_reason"}
	msgKeys    = []string{"content", "reasoning_content", "reasoning"}
	msgFields  = append(slices.Clone(msgKeys), "tool_calls") // msg reads these
	toolKeys   = []string{"index", "function"}
	fnKeys     = []string{"name", "arguments"}
	usageKeys  = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details"}
	detailKeys = []string{"cached_tokens"}
	errorKeys  = []string{"message"}
)

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// top parses the whole input as one object.
func (s *scanner) top(p *chunkParts) error {
	s.ws()
	err := s.object(topKeys, func(k int) error {
		switch k {
		case 0:
			return s.choices(p)
		case 1:
			return s.usage(p)
		default:
			return s.errorValue(p)
		}
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errDecline // trailing data: invalid JSON
	}
	return nil
}

// object walks an object whose interesting keys are keys (at most 16);
// field is called with the key's index, positioned at its value; other
// values are skipped. An interesting key given twice declines, so
// encoding/json decides how duplicates merge. A func argument that does not
// escape costs no allocation.
func (s *scanner) object(keys []string, field func(k int) error) error {
	return s.objectOther(keys, field, nil)
}

// objectOther is object with other called, instead of skipping, on each
// key that is not one of keys (nil: skip); other must consume the value.
func (s *scanner) objectOther(keys []string, field func(k int) error, other func(key []byte) error) error {
	var seen uint16
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return errDecline
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		key, ok := s.rawString()
		if !ok {
			return errDecline
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errDecline
		}
		s.i++
		s.ws()
		k, err := matchKey(key, keys)
		if err != nil {
			return err
		}
		if k >= 0 && seen&(1<<k) != 0 {
			return errDecline // duplicate key: encoding/json merges, let it
		}
		switch {
		case k >= 0:
			seen |= 1 << k
			err = field(k)
		case other != nil:
			err = other(key)
		default:
			err = s.skip(0)
		}
		if err != nil {
			return err
		}
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// matchKey returns the index of key in keys, -1 for an uninteresting key,
// or errDecline when encoding/json could match it where we do not.
func matchKey(key []byte, keys []string) (int, error) {
	for i, k := range keys {
		if string(key) == k {
			return i, nil
		}
	}
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return -1, errDecline // escaped or non-ASCII key: may fold onto ours
		}
	}
	for _, k := range keys {
		// ASCII folding keeps the length, so only same-length keys can match.
		if len(key) == len(k) && bytes.EqualFold(key, []byte(k)) {
			return -1, errDecline
		}
	}
	return -1, nil
}

// null consumes a JSON null if one is next.
func (s *scanner) null() bool {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

func (s *scanner) choices(p *chunkParts) error {
	var throwaway chunkParts // later choices are validated, not kept
	return s.firstOfArray(func(first, null bool) error {
		p.hasChoices = true
		dst := p
		if !first {
			dst = &throwaway
		}
		if null {
			return nil
		}
		return s.choice(dst)
	})
}

// firstOfArray reads a JSON array (or null), calling elem for each element
// with whether it is the first and whether it is null (already consumed):
// the callers keep the first element and only validate the rest, as
// encoding/json, the reference, would refuse a bad later one. Any other
// shape declines.
func (s *scanner) firstOfArray(elem func(first, null bool) error) error {
	if s.null() {
		return nil
	}
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return errDecline
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		s.ws()
		if err := elem(n == 0, s.null()); err != nil {
			return err
		}
		if done, err := s.next(']'); done || err != nil {
			return err
		}
	}
}

func (s *scanner) choice(p *chunkParts) error {
	return s.object(choiceKeys, func(k int) error {
		var err error
		switch k {
		case 0:
			err = s.msg(&p.delta)
		case 1:
			err = s.msg(&p.message)
		case 2:
			p.text, p.hasText, err = s.stringValue()
		default:
			p.finish, _, err = s.stringValue()
		}
		return err
	})
}

func (s *scanner) msg(m *msgParts) error {
	if s.null() {
		return nil
	}
	return s.objectOther(msgFields, func(k int) error {
		var err error
		switch k {
		case 0:
			m.content, m.hasContent, err = s.stringValue()
		case 1:
			m.reasoningContent, m.hasReasoningContent, err = s.stringValue()
		case 2:
			m.reasoning, m.hasReasoning, err = s.stringValue()
		default:
			err = s.toolCalls(&m.tool)
		}
		return err
	}, func(key []byte) error {
		m.noteOther(key)
		return s.skip(0)
	})
}

// toolCalls reads tool_calls: its first element is kept, later ones
// checked the same way (encoding/json, the reference, would refuse them).
// Any other shape declines; decodeSlow then ignores the field (toolPart).
func (s *scanner) toolCalls(t *toolParts) error {
	var throwaway toolParts
	return s.firstOfArray(func(first, null bool) error {
		dst := t
		if !first {
			dst = &throwaway
		}
		dst.has = true
		if null {
			return nil
		}
		return s.toolCall(dst)
	})
}

// toolCall reads one tool_calls element: index and function.
func (s *scanner) toolCall(t *toolParts) error {
	return s.object(toolKeys, func(k int) error {
		if k == 0 {
			var err error
			t.index, err = s.intValue()
			return err
		}
		if s.null() {
			return nil
		}
		return s.object(fnKeys, func(k int) error {
			var err error
			if k == 0 {
				t.name, _, err = s.stringValue()
			} else {
				t.args, _, err = s.stringValue()
			}
			return err
		})
	})
}

func (s *scanner) usage(p *chunkParts) error {
	if s.null() {
		return nil
	}
	p.hasUsage = true
	return s.object(usageKeys, func(k int) error {
		var err error
		switch k {
		case 0:
			p.prompt, err = s.intValue()
		case 1:
			p.completion, err = s.intValue()
		default:
			if s.null() {
				return nil
			}
			if s.i < len(s.b) && s.b[s.i] != '{' {
				return s.skip(0) // not an object: no cached count (as encoding/json's failed decode)
			}
			err = s.object(detailKeys, func(int) error {
				var err error
				p.cached, err = s.intValue()
				return err
			})
		}
		return err
	})
}

// errorValue reads "error": a string, an object with "message", or any
// other non-null value (an error without a message).
func (s *scanner) errorValue(p *chunkParts) error {
	if s.null() {
		return nil
	}
	p.hasError = true
	if s.i >= len(s.b) {
		return errDecline
	}
	switch s.b[s.i] {
	case '"':
		msg, _, err := s.stringValue()
		p.errMsg = msg
		return err
	case '{':
		return s.object(errorKeys, func(int) error {
			msg, _, err := s.stringValue()
			p.errMsg = msg
			return err
		})
	}
	return s.skip(0)
}
