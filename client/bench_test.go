package client

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSSEParse measures SSEReader.Next per event over a stream of
// vLLM-shaped chunks (about 200 bytes each) delivered in socket-sized
// reads. One op is one event: allocs/op is allocations per event (target
// 0); events/s per core is reported (target >= 1e6).
func BenchmarkSSEParse(b *testing.B) {
	for _, read := range []int{1500, 16 << 10} {
		b.Run(readName(read), func(b *testing.B) {
			src := newCycleReader(sampleStream(64), read)
			s := NewSSEReader(src)
			b.SetBytes(int64(len(sampleStream(1))))
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuClock()
			for i := 0; i < b.N; i++ {
				if _, err := s.Next(); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, cpuClock()-cpu, "events")
		})
	}
}

func readName(n int) string {
	if n%1024 == 0 {
		return "read=" + strconv.Itoa(n/1024) + "KiB"
	}
	return "read=" + strconv.Itoa(n) + "B"
}

// BenchmarkChunkDecode measures ChunkDecoder.Decode on the common chunk
// shapes. One op is one chunk.
func BenchmarkChunkDecode(b *testing.B) {
	cases := []struct{ name, chunk string }{
		{"content", vllmChunk(" the")},
		{"escaped", vllmChunk("a\n\"b\" über")},
		{"usage", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],` +
			`"usage":{"prompt_tokens":25,"total_tokens":281,"completion_tokens":256}}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var d ChunkDecoder
			data := []byte(c.chunk)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu := cpuClock()
			for i := 0; i < b.N; i++ {
				if _, err := d.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, cpuClock()-cpu, "chunks")
		})
		// The same chunk through encoding/json, for the ratio.
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			var d ChunkDecoder
			data := []byte(c.chunk)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			cpu := cpuClock()
			for i := 0; i < b.N; i++ {
				if err := d.decodeSlow(data); err != nil {
					b.Fatal(err)
				}
			}
			reportRates(b, cpuClock()-cpu, "chunks")
		})
	}
}

// reportRates reports b.N per wall second and, where cpuClock can read
// the CPU time (cpu > 0), per CPU second.
func reportRates(b *testing.B, cpu time.Duration, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit+"/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), unit+"/cpu-s")
	}
}

// BenchmarkStreamEvent is the client's whole per-event parsing work: SSE
// framing plus chunk decoding. One op is one event.
func BenchmarkStreamEvent(b *testing.B) {
	var d ChunkDecoder
	benchEvents(b, sampleStream(64), func(data []byte) error {
		_, err := d.Decode(data)
		return err
	})
}

// benchEvents runs b.N events of stream (repeated, in 16 KiB reads)
// through an SSEReader and decode.
func benchEvents(b *testing.B, stream []byte, decode func([]byte) error) {
	s := NewSSEReader(newCycleReader(stream, 16<<10))
	b.ReportAllocs()
	cpu := cpuClock()
	for i := 0; i < b.N; i++ {
		data, err := s.Next()
		if err != nil {
			b.Fatal(err)
		}
		if err := decode(data); err != nil {
			b.Fatal(err)
		}
	}
	reportRates(b, cpuClock()-cpu, "events")
}

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

// BenchmarkStreamEventGzip is BenchmarkStreamEvent over a gzipped stream
// flushed per event (a compressing proxy that streams): decompression,
// SSE framing and chunk decoding. One op is one event; the pooled gunzip
// is taken once per stream of 64 events, as Do takes it once per request.
func BenchmarkStreamEventGzip(b *testing.B) {
	var zbuf bytes.Buffer
	zw := gzip.NewWriter(&zbuf)
	events := bytes.SplitAfter(sampleStream(64), []byte("\n\n"))
	for _, ev := range events {
		zw.Write(ev)
		zw.Flush()
	}
	zw.Close()
	z := zbuf.Bytes()
	var src bytes.Reader
	s := NewSSEReader(nil)
	var d ChunkDecoder
	b.ReportAllocs()
	cpu := cpuClock()
	for i := 0; i < b.N; {
		src.Reset(z)
		g := newGunzip(&src)
		s.Reset(g)
		for ; i < b.N; i++ {
			data, err := s.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if _, err := d.Decode(data); err != nil {
				b.Fatal(err)
			}
		}
		g.release()
	}
	reportRates(b, cpuClock()-cpu, "events")
}
