package client

import (
	"fmt"
	"strings"
)

// vllmChunk is a content chunk exactly as vLLM 0.x sends it for chat.
func vllmChunk(content string) string {
	return `{"id":"chatcmpl-9f2c7a41b3d84c0e","object":"chat.completion.chunk","created":1732950000,` +
		`"model":"Qwen/Qwen2.5-7B-Instruct-AWQ","choices":[{"index":0,"delta":{"content":` +
		quoteJSON(content) + `},"logprobs":null,"finish_reason":null}]}`
}

// quoteJSON quotes s the way servers do (only what JSON requires).
func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// sampleStream is n content events in SSE framing, the bulk of any
// streaming response.
func sampleStream(n int) []byte {
	words := []string{" the", " quick", " brown", " fox", "\n", " \"jumps\"", " über", " 🦊"}
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteString("data: ")
		b.WriteString(vllmChunk(words[i%len(words)]))
		b.WriteString("\n\n")
	}
	return []byte(b.String())
}

// cycleReader repeats buf forever, at most max bytes per Read, like a
// socket that delivers a stream in pieces. It does not allocate.
type cycleReader struct {
	buf []byte
	off int
	max int
}

func newCycleReader(buf []byte, max int) *cycleReader { return &cycleReader{buf: buf, max: max} }

func (c *cycleReader) Read(p []byte) (int, error) {
	if len(p) > c.max {
		p = p[:c.max]
	}
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.buf[c.off:])
		n += k
		c.off = (c.off + k) % len(c.buf)
	}
	return n, nil
}
