package client

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
)

// Accept-Encoding choices (Options.AcceptEncoding).
const (
	// EncodingGzip asks for gzip, as the OpenAI SDKs and browsers do, and
	// times the decompressed content as it arrives: a proxy that compresses
	// the stream holds it for this client as it does for real users.
	EncodingGzip = "gzip"
	// EncodingIdentity asks for no compression: the path's pace without
	// what a compressing proxy does to real clients (servebench's only
	// behaviour before gzip became the default).
	EncodingIdentity = "identity"
)

// AcceptEncodings lists the valid Options.AcceptEncoding values, the
// default first.
var AcceptEncodings = []string{EncodingGzip, EncodingIdentity}

// CheckAcceptEncoding says what is wrong with an Accept-Encoding choice.
func CheckAcceptEncoding(s string) error {
	for _, e := range AcceptEncodings {
		if s == e {
			return nil
		}
	}
	return fmt.Errorf("%q: expected one of %s", s, strings.Join(AcceptEncodings, ", "))
}

// sdkVersion is the openai-go release whose request headers sdkHeaders
// copies (internal/requestconfig/requestconfig.go: Accept, User-Agent
// "OpenAI/Go VERSION", the X-Stainless-* platform headers; net/http adds
// Accept-Encoding: gzip). Proxies and gateways that act on a client's
// headers then treat servebench as they treat an SDK.
const sdkVersion = "3.58.0"

// sdkHeaders are the headers every request carries besides Host,
// Content-Type, Content-Length, Accept, Authorization and X-Request-Id,
// for an Accept-Encoding choice.
func sdkHeaders(acceptEncoding string) [][2]string {
	return [][2]string{
		{"User-Agent", "OpenAI/Go " + sdkVersion + " (servebench)"},
		{"Accept-Encoding", acceptEncoding},
		{"X-Stainless-Lang", "go"},
		{"X-Stainless-Package-Version", sdkVersion},
		{"X-Stainless-OS", stainlessOS()},
		{"X-Stainless-Arch", stainlessArch()},
		{"X-Stainless-Runtime", "go"},
		{"X-Stainless-Runtime-Version", runtime.Version()},
		{"X-Stainless-Retry-Count", "0"},
	}
}

// stainlessOS and stainlessArch name the platform as openai-go does.
func stainlessOS() string {
	switch runtime.GOOS {
	case "darwin":
		return "MacOS"
	case "linux":
		return "Linux"
	case "windows":
		return "Windows"
	case "freebsd":
		return "FreeBSD"
	}
	return "Other:" + runtime.GOOS
}

func stainlessArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x64"
	case "386":
		return "x32"
	case "arm", "arm64":
		return runtime.GOARCH
	}
	return "other:" + runtime.GOARCH
}

// gunzip decompresses a gzip response body as its bytes arrive: each Read
// returns what the compressed bytes read so far decode to (a proxy that
// flushes its compressor per chunk streams; one that does not, holds).
// Pooled with its buffers (the flate window is 32 KiB), so a stream costs
// no allocation; the gzip header is read on the first Read, not before.
type gunzip struct {
	src     io.Reader
	br      bufio.Reader // gives flate the io.ByteReader it would otherwise allocate
	zr      gzip.Reader
	started bool
}

var gunzipPool = sync.Pool{New: func() any { return new(gunzip) }}

func newGunzip(src io.Reader) *gunzip {
	g := gunzipPool.Get().(*gunzip)
	g.src, g.started = src, false
	return g
}

func (g *gunzip) Read(p []byte) (int, error) {
	if !g.started {
		g.started = true
		g.br.Reset(g.src)
		if err := g.zr.Reset(&g.br); err != nil {
			return 0, fmt.Errorf("gzip: %w", err)
		}
	}
	return g.zr.Read(p)
}

// release returns g to the pool, holding no body.
func (g *gunzip) release() {
	g.src = nil
	g.br.Reset(nil)
	gunzipPool.Put(g)
}
