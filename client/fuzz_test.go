package client

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

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

// FuzzChunkDecode checks the allocation-free scanner against encoding/json
// on every field it extracts: when the scanner answers, encoding/json must
// accept the input and agree; Decode fails exactly when encoding/json does.
func FuzzChunkDecode(f *testing.F) {
	for _, s := range []string{
		vllmChunk("hello"),
		vllmChunk("a\n\"b\" über 🦊"),
		`{"choices":[{"delta":{"reasoning_content":"x\ud83e\udd8a"},"finish_reason":"stop"}]}`,
		`{"choices":[],"usage":{"prompt_tokens":25,"completion_tokens":256}}`,
		`{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":-0,"completion_tokens":null}}`,
		`{"error":{"message":"boom","code":400}}`,
		`{"error":"boom"}`,
		`{"Choices":[{"TEXT":"x"}],"usage":1}`,
		`{"choices":[{"text":"a\ud800b"},null,{}]}`,
		"{\"choices\":[{\"text\":\"\xff\"}]}",
		`[1,2,{"a":[-1.5e+3,true,false,null]}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, fastOK, slow, slowErr := fastAndSlow(in)
		if fastOK {
			if slowErr != nil {
				t.Fatalf("scanner accepted what encoding/json rejects (%v): %+v", slowErr, fast)
			}
			if fast != slow {
				t.Fatalf("scanner %+v\nencoding/json %+v", fast, slow)
			}
		}
		var d ChunkDecoder
		c, err := d.Decode(bytes.Clone(in))
		if (err != nil) != (slowErr != nil) {
			t.Fatalf("Decode error %v, encoding/json error %v", err, slowErr)
		}
		if err == nil && summarize(c) != slow {
			t.Fatalf("Decode %+v\nencoding/json %+v", summarize(c), slow)
		}
	})
}
