package client

import (
	"bytes"
	"unicode/utf8"
)

// rawString consumes a string and returns its bytes between the quotes,
// escapes untouched, after checking the escapes and that no control
// character is in it.
func (s *scanner) rawString() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	i := start // where the careful loop below starts
	// Fast path: most strings have no escape; find the quote with
	// IndexByte and check the span in one tight loop.
	if q := bytes.IndexByte(s.b[start:], '"'); q >= 0 {
		span := s.b[start : start+q]
		n := 0
		for n < len(span) && span[n] >= 0x20 && span[n] != '\\' {
			n++
		}
		if n == len(span) {
			s.i = start + q + 1
			return span, true
		}
		i += n // what the fast loop passed needs no second look
	}
	for ; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			return s.b[start:i], true
		case c == '\\':
			if i+1 >= len(s.b) {
				return nil, false
			}
			switch s.b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 >= len(s.b) || !isHex4(s.b[i+2:i+6]) {
					return nil, false
				}
				i += 5
			default:
				return nil, false
			}
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// stringValue reads a string field: null gives (nil, false); a string gives
// its unescaped bytes (a slice of the input when nothing needed unescaping).
func (s *scanner) stringValue() ([]byte, bool, error) {
	if s.null() {
		return nil, false, nil
	}
	raw, ok := s.rawString()
	if !ok {
		return nil, false, errDecline
	}
	plain := true
	for _, c := range raw {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return raw, true, nil
	}
	v, err := s.unescape(raw)
	return v, true, err
}

// unescape appends the decoded raw string to s.out and returns that part.
// Invalid UTF-8 and lone surrogates decline: encoding/json replaces them
// with U+FFFD and is the reference for such input.
func (s *scanner) unescape(raw []byte) ([]byte, error) {
	start := len(s.out)
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			e := raw[i+1] // rawString checked every escape is complete
			if e != 'u' {
				s.out = append(s.out, unescapeByte(e))
				i += 2
				continue
			}
			r := rune(hex4(raw[i+2:]))
			i += 6
			if 0xD800 <= r && r < 0xDC00 {
				if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
					return nil, errDecline
				}
				lo := rune(hex4(raw[i+2:]))
				if lo < 0xDC00 || lo > 0xDFFF {
					return nil, errDecline
				}
				r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
				i += 6
			} else if 0xDC00 <= r && r <= 0xDFFF {
				return nil, errDecline
			}
			s.out = utf8.AppendRune(s.out, r)
		case c < utf8.RuneSelf:
			s.out = append(s.out, c)
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, errDecline
			}
			s.out = append(s.out, raw[i:i+n]...)
			i += n
		}
	}
	return s.out[start:len(s.out):len(s.out)], nil
}

func unescapeByte(e byte) byte {
	switch e {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return e // '"', '\\', '/'
}

func hex4(b []byte) int {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}

// intValue reads a token count: null leaves 0 (as encoding/json does for an
// int); anything but a plain integer of up to 18 digits declines.
func (s *scanner) intValue() (int, error) {
	if s.null() {
		return 0, nil
	}
	i, neg := s.i, false
	if i < len(s.b) && s.b[i] == '-' {
		neg = true
		i++
	}
	digits := i
	v := 0
	for i < len(s.b) && '0' <= s.b[i] && s.b[i] <= '9' {
		v = v*10 + int(s.b[i]-'0')
		i++
	}
	n := i - digits
	if n == 0 || n > 18 || (n > 1 && s.b[digits] == '0') {
		return 0, errDecline
	}
	if i < len(s.b) {
		switch s.b[i] {
		case '.', 'e', 'E':
			return 0, errDecline
		}
	}
	s.i = i
	if neg {
		v = -v
	}
	return v, nil
}

// skip validates and passes over any value.
func (s *scanner) skip(depth int) error {
	if depth > maxScanDepth || s.i >= len(s.b) {
		return errDecline
	}
	switch c := s.b[s.i]; {
	case c == '"':
		if _, ok := s.rawString(); !ok {
			return errDecline
		}
		return nil
	case c == '{':
		return s.skipObject(depth)
	case c == '[':
		return s.array(depth)
	case c == '-' || ('0' <= c && c <= '9'):
		return s.number()
	}
	for _, lit := range [...]string{"null", "true", "false"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return nil
		}
	}
	return errDecline
}

func (s *scanner) skipObject(depth int) error {
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if _, ok := s.rawString(); !ok {
			return errDecline
		}
		s.ws()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return errDecline
		}
		s.i++
		s.ws()
		if err := s.skip(depth + 1); err != nil {
			return err
		}
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

func (s *scanner) array(depth int) error {
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for {
		s.ws()
		if err := s.skip(depth + 1); err != nil {
			return err
		}
		if done, err := s.next(']'); done || err != nil {
			return err
		}
	}
}

// next consumes the ',' between members or the closing byte (done).
func (s *scanner) next(closing byte) (done bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return false, errDecline
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		return true, nil
	}
	return false, errDecline
}

// number passes over a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	i := s.i
	if s.b[i] == '-' {
		i++
	}
	switch {
	case i < len(s.b) && s.b[i] == '0':
		i++
	case i < len(s.b) && '1' <= s.b[i] && s.b[i] <= '9':
		i = digitsEnd(s.b, i)
	default:
		return errDecline
	}
	if i < len(s.b) && s.b[i] == '.' {
		j := digitsEnd(s.b, i+1)
		if j == i+1 {
			return errDecline
		}
		i = j
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		i++
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		j := digitsEnd(s.b, i)
		if j == i {
			return errDecline
		}
		i = j
	}
	s.i = i
	return nil
}

func digitsEnd(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
