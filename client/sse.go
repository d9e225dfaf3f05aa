package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxEventSize caps one SSE line and one event's joined data, so a server
// that never sends a line break cannot grow the client's memory without
// bound. Real LLM chunks are a few hundred bytes; a non-streaming-sized
// body sent as one event still fits.
const MaxEventSize = 8 << 20

// ErrEventTooLarge is returned by SSEReader.Next when a line or an event's
// data exceeds MaxEventSize.
var ErrEventTooLarge = errors.New("sse: event larger than MaxEventSize")

const (
	sseInitialBuf = 4096
	sseKeepBuf    = 64 << 10 // larger buffers are dropped on Reset
)

// SSEReader reads the data of Server-Sent Events from a stream, following
// the WHATWG event-stream grammar where it matters to LLM servers:
//
//   - lines end in "\n", "\r\n" or a lone "\r" (also when the "\r" and "\n"
//     arrive in different reads);
//   - a UTF-8 byte order mark at the very start is dropped;
//   - lines starting with ":" are comments and are skipped;
//   - several "data:" lines in one event are joined with "\n";
//   - one space after the colon is removed; "event:", "id:", "retry:" and
//     unknown fields are ignored;
//   - an event ends at a blank line; an event with no data line is not
//     returned;
//   - unlike the spec, a last event not followed by a blank line at EOF is
//     still returned, because some servers close the stream right after
//     "data: [DONE]\n".
//
// The reader owns its buffers and reuses them: the slice Next returns is
// valid only until the next call to Next, and a caller that keeps it must
// copy it. In steady state Next allocates nothing. An SSEReader is not safe
// for concurrent use.
type SSEReader struct {
	r          io.Reader
	buf        []byte // read buffer; unread bytes are buf[start:end]
	start, end int
	data       []byte // joined data of the event being assembled
	hasData    bool   // a data field was seen in the current event
	skipLF     bool   // the last line ended in '\r': a following '\n' belongs to it
	bomDone    bool   // the stream's start was checked for a byte order mark
	err        error  // sticky error from r (io.EOF at the end)
}

// NewSSEReader returns a reader of the events in r.
func NewSSEReader(r io.Reader) *SSEReader {
	s := &SSEReader{}
	s.Reset(r)
	return s
}

// Reset discards all state and reads from r next, keeping the buffers, so a
// pooled SSEReader serves many streams without allocating.
func (s *SSEReader) Reset(r io.Reader) {
	// A huge event grew the buffers once; do not keep that much per
	// pooled reader.
	if s.buf == nil || len(s.buf) > sseKeepBuf {
		s.buf = make([]byte, sseInitialBuf)
	}
	if cap(s.data) > sseKeepBuf {
		s.data = nil
	}
	s.r = r
	s.start, s.end = 0, 0
	s.data = s.data[:0]
	s.hasData, s.skipLF, s.bomDone = false, false, false
	s.err = nil
}

// Next returns the data of the next event. At the end of the stream it
// returns io.EOF; a read error from the underlying reader is returned as is
// (after any complete event before it). The returned slice is valid until
// the next call.
func (s *SSEReader) Next() ([]byte, error) {
	for {
		line, err := s.readLine()
		if err != nil {
			if s.hasData && errors.Is(err, io.EOF) {
				// The last event lacked its blank line: deliver it once.
				s.hasData = false
				return s.data, nil
			}
			return nil, err
		}
		if len(line) == 0 {
			if s.hasData {
				s.hasData = false
				return s.data, nil
			}
			continue
		}
		if err := s.field(line); err != nil {
			return nil, err
		}
	}
}

// field applies one non-blank line to the event being assembled.
func (s *SSEReader) field(line []byte) error {
	if line[0] == ':' {
		return nil // comment (keep-alive pings use these)
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	if string(name) != "data" {
		return nil // event, id, retry and unknown fields do not matter here
	}
	if !s.hasData {
		s.data = s.data[:0]
		s.hasData = true
	} else {
		s.data = append(s.data, '\n')
	}
	if len(s.data)+len(value) > MaxEventSize {
		return fmt.Errorf("%w (%d bytes of data)", ErrEventTooLarge, len(s.data)+len(value))
	}
	s.data = append(s.data, value...)
	return nil
}

// readLine returns the next line without its terminator. The slice points
// into s.buf and is valid until the next readLine.
func (s *SSEReader) readLine() ([]byte, error) {
	for {
		if !s.bomDone && !s.skipBOM() {
			if err := s.fill(); err != nil {
				return nil, err
			}
			continue
		}
		if s.skipLF && s.start < s.end {
			if s.buf[s.start] == '\n' {
				s.start++
			}
			s.skipLF = false
		}
		b := s.buf[s.start:s.end]
		n := bytes.IndexByte(b, '\n')
		limit := b
		if n >= 0 {
			limit = b[:n]
		}
		// A lone '\r' also ends a line; look for one only before the '\n'.
		if r := bytes.IndexByte(limit, '\r'); r >= 0 {
			line := b[:r]
			s.start += r + 1
			s.skipLF = true
			return line, nil
		}
		if n >= 0 {
			s.start += n + 1
			return b[:n], nil
		}
		if s.err != nil {
			if s.start < s.end {
				// Last line without a terminator.
				line := b
				s.start = s.end
				return line, nil
			}
			return nil, s.err
		}
		if err := s.fill(); err != nil {
			return nil, err
		}
	}
}

// skipBOM drops a UTF-8 byte order mark at the start of the stream, as the
// grammar says. It reports false while too few bytes are buffered to know.
func (s *SSEReader) skipBOM() bool {
	const bom = "\xEF\xBB\xBF"
	b := s.buf[s.start:s.end]
	if len(b) < len(bom) && s.err == nil && string(b) == bom[:len(b)] {
		return false
	}
	if len(b) >= len(bom) && string(b[:len(bom)]) == bom {
		s.start += len(bom)
	}
	s.bomDone = true
	return true
}

// fill reads more bytes, compacting or growing the buffer first.
func (s *SSEReader) fill() error {
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	if s.end == len(s.buf) {
		if len(s.buf) >= MaxEventSize {
			return fmt.Errorf("%w (a line of over %d bytes)", ErrEventTooLarge, len(s.buf))
		}
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	// Bounded: a reader that keeps returning 0, nil is broken.
	for i := 0; i < 100; i++ {
		n, err := s.r.Read(s.buf[s.end:])
		if n < 0 || n > len(s.buf)-s.end {
			s.err = fmt.Errorf("sse: reader returned invalid count %d", n)
			return nil
		}
		s.end += n
		if err != nil {
			s.err = err
			return nil
		}
		if n > 0 {
			return nil
		}
	}
	s.err = io.ErrNoProgress
	return nil
}
