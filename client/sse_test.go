package client

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAllEvents drains r with an SSEReader, copying each event.
func readAllEvents(t testing.TB, r io.Reader) ([]string, error) {
	t.Helper()
	s := NewSSEReader(r)
	var out []string
	for i := 0; i < 1_000_000; i++ { // bounded: inputs here are small
		data, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, string(data))
	}
	t.Fatal("SSEReader never reached EOF")
	return nil, nil
}

// referenceSSE is the event-stream grammar written as plainly as possible
// (whole input in memory, split into lines first): the oracle for the
// streaming reader in tests and fuzzing.
func referenceSSE(in []byte) []string {
	in = bytes.TrimPrefix(in, []byte("\xEF\xBB\xBF"))
	var lines []string
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, string(in))
			break
		}
		lines = append(lines, string(in[:i]))
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var events []string
	var data []string
	has := false
	for _, l := range lines {
		switch {
		case l == "":
			if has {
				events = append(events, strings.Join(data, "\n"))
			}
			data, has = nil, false
		case l[0] == ':':
		default:
			name, value, found := strings.Cut(l, ":")
			if found && strings.HasPrefix(value, " ") {
				value = value[1:]
			}
			if name == "data" {
				data, has = append(data, value), true
			}
		}
	}
	if has {
		events = append(events, strings.Join(data, "\n"))
	}
	return events
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		// The common vLLM shape: LF line ends, blank line between events.
		{"lf", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
		// CRLF line ends (some proxies and TGI).
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		// Lone CR line ends, allowed by the grammar.
		{"cr", "data: a\r\rdata: b\r\r", []string{"a", "b"}},
		// Comments (keep-alive pings) are skipped, also between data lines.
		{"comments", ": ping\n\ndata: a\n: mid\ndata: b\n\n", []string{"a\nb"}},
		// Multi-line data joins with "\n".
		{"multiline", "data: {\"x\":\ndata: 1}\n\n", []string{"{\"x\":\n1}"}},
		// event:, id:, retry: and unknown fields are ignored.
		{"fields", "event: message\nid: 7\nretry: 10\nfoo: bar\ndata: a\n\n", []string{"a"}},
		// Only one space after the colon is removed; no space is fine too.
		{"spaces", "data:a\n\ndata:  b\n\n", []string{"a", " b"}},
		// "data" with no colon is a data field with an empty value.
		{"bare data", "data\n\n", []string{""}},
		// An event with no data line is not delivered.
		{"no data", "event: x\n\n\n\ndata: a\n\n", []string{"a"}},
		// No trailing blank line at EOF: the last event is still delivered.
		{"eof no blank", "data: a\n\ndata: [DONE]\n", []string{"a", "[DONE]"}},
		// No line terminator at all at EOF.
		{"eof no newline", "data: [DONE]", []string{"[DONE]"}},
		// Empty stream.
		{"empty", "", nil},
		// A field named "data" only when exact: "Data" and "datax" are not.
		{"case", "Data: x\ndatax: y\ndata: z\n\n", []string{"z"}},
		// A byte order mark at the start is dropped (only there).
		{"bom", "\xEF\xBB\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\ndata: c\n\n", []string{"a", "c"}},
		// A colon inside the value stays.
		{"colon in value", "data: a:b\n\n", []string{"a:b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Whole, one byte at a time, and through the reference.
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAllEvents(t, r)
				if err != nil {
					t.Fatal(err)
				}
				if !equalStrings(got, tt.want) {
					t.Errorf("got %q, want %q", got, tt.want)
				}
			}
			if ref := referenceSSE([]byte(tt.in)); !equalStrings(ref, tt.want) {
				t.Errorf("reference got %q, want %q", ref, tt.want)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSSEReaderCRLFSplit puts the "\r" and "\n" of one line end in
// different reads: the "\n" must not count as a second, blank line.
func TestSSEReaderCRLFSplit(t *testing.T) {
	r := io.MultiReader(strings.NewReader("data: a\r"), strings.NewReader("\ndata: b\r\n\r\n"))
	got, err := readAllEvents(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a\nb"}; !equalStrings(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestSSEReaderLongLine crosses the initial buffer size many times.
func TestSSEReaderLongLine(t *testing.T) {
	long := strings.Repeat("x", 100_000)
	got, err := readAllEvents(t, strings.NewReader("data: "+long+"\n\ndata: y\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != long || got[1] != "y" {
		t.Errorf("got %d events, first of %d bytes", len(got), len(got[0]))
	}
}

// TestSSEReaderTooLarge: a line that never ends is an error, not a
// memory blow-up.
func TestSSEReaderTooLarge(t *testing.T) {
	r := io.LimitReader(repeatReader('x'), MaxEventSize+10)
	_, err := readAllEvents(t, io.MultiReader(strings.NewReader("data: "), r))
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("got %v, want ErrEventTooLarge", err)
	}
}

type repeatReader byte

func (c repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// TestSSEReaderReadError: an error from the stream is returned after the
// complete events before it, and is not io.EOF.
func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom))
	s := NewSSEReader(r)
	if d, err := s.Next(); err != nil || string(d) != "a" {
		t.Fatalf("first event: %q, %v", d, err)
	}
	if _, err := s.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v, want %v", err, boom)
	}
}

// TestSSEReaderZeroAllocs: in steady state Next allocates nothing.
func TestSSEReaderZeroAllocs(t *testing.T) {
	src := newCycleReader(sampleStream(64), 1500)
	s := NewSSEReader(src)
	for i := 0; i < 1000; i++ { // warm up the buffers
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(10_000, func() {
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Next allocates %.2f times per event, want 0", allocs)
	}
}

// splitReader hands out its input in pieces whose sizes follow a pattern
// chosen by the fuzzer, so events, line ends and "\r\n" pairs land across
// reads in every way.
type splitReader struct {
	in      []byte
	pattern uint32
	n       int
}

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	size := int((s.pattern>>(uint(s.n)%29))&7) + 1
	s.n++
	size = min(size, len(p), len(s.in))
	copy(p, s.in[:size])
	s.in = s.in[size:]
	return size, nil
}

// FuzzSSEReader checks the streaming reader against the plain reference
// grammar (referenceSSE) for any input and any way of splitting it.
func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\n\n"), uint32(0))
	f.Add([]byte("data: a\r\n\r\ndata: b\r\rdata:c"), uint32(0x12345))
	f.Add([]byte(": ping\nevent: x\nid: 1\ndata: {\"x\":\ndata: 1}\n\n\n"), uint32(7))
	f.Add(sampleStream(4), uint32(0xdeadbeef))
	f.Fuzz(func(t *testing.T, in []byte, pattern uint32) {
		want := referenceSSE(in)
		s := NewSSEReader(&splitReader{in: in, pattern: pattern})
		for i := 0; ; i++ {
			data, err := s.Next()
			if errors.Is(err, io.EOF) {
				if i != len(want) {
					t.Fatalf("got %d events, want %d: %q", i, len(want), want)
				}
				return
			}
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			if i >= len(want) || string(data) != want[i] {
				t.Fatalf("event %d: got %q, want %q", i, data, want)
			}
		}
	})
}
