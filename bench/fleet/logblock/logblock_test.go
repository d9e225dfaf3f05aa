package logblock

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// sampleDir writes a small results directory: a file of several body
// lines' worth of incompressible-ish text and a small one.
func sampleDir(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	var big strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&big, `{"index":%d,"e2e_s":%d.%06d}`+"\n", i, i%7, (i*7919)%1000003)
	}
	files := map[string]string{"requests.jsonl": big.String(), "results.json": `{"schema":1}` + "\n"}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, sampleTime, sampleTime); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

// sampleTime dates the sample files to the nanosecond: a saved /metrics
// snapshot is dated by its file's modification time.
var sampleTime = time.Date(2026, 12, 1, 13, 0, 0, 123456789, time.UTC)

// block returns the block Write writes for the sample directory.
func block(t *testing.T, name string) (string, map[string]string) {
	t.Helper()
	dir, files := sampleDir(t)
	var b bytes.Buffer
	if err := Write(&b, name, dir, []string{"results.json", "requests.jsonl"}); err != nil {
		t.Fatal(err)
	}
	return b.String(), files
}

// extract writes log to a file and extracts it.
func extract(t *testing.T, log string) (string, []Block, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pod.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := Extract(path, t.TempDir())
	return path, blocks, err
}

func checkFiles(t *testing.T, b Block, want map[string]string) {
	t.Helper()
	if len(b.Files) != len(want) {
		t.Errorf("block %s: files %q, want %d", b.Name, b.Files, len(want))
	}
	for name, body := range want {
		got, err := os.ReadFile(filepath.Join(b.Dir, name))
		if err != nil || string(got) != body {
			t.Errorf("block %s: %s read back %d bytes (%v), want the %d written", b.Name, name, len(got), err, len(body))
		}
		if fi, err := os.Stat(filepath.Join(b.Dir, name)); err == nil && !fi.ModTime().Equal(sampleTime) {
			t.Errorf("block %s: %s modified %v, want %v as written", b.Name, name, fi.ModTime(), sampleTime)
		}
	}
	if _, err := os.Stat(filepath.Join(b.Dir, ".body")); err == nil {
		t.Errorf("block %s: the decoded body was left in %s", b.Name, b.Dir)
	}
}

// TestRoundTrip: blocks read back byte for byte from logs as kubectl gives
// them: with other lines around, two pods' logs concatenated, lines
// prefixed by --timestamps and --prefix, a stray line inside.
func TestRoundTrip(t *testing.T) {
	blk, files := block(t, "shard-0")
	blk1, _ := block(t, "shard-1")
	lines := strings.Split(strings.TrimSuffix(blk, "\n"), "\n")
	if n := len(lines); n < 6 || len(lines[1]) != lineChars || !strings.HasPrefix(lines[n-2], "sha256:") {
		t.Fatalf("block of %d lines, first body line %d characters: want several %d-character lines and a checksum line\n%s", n, len(lines[1]), lineChars, blk)
	}
	prefixed := func(prefix string) string {
		var b strings.Builder
		for i, l := range lines {
			fmt.Fprintf(&b, "%s%s\n", strings.ReplaceAll(prefix, "N", fmt.Sprint(i)), l)
		}
		return b.String()
	}
	withStray := strings.Replace(blk, "\n", "\nservebench: a warning written to stderr meanwhile\n", 3)
	for _, tc := range []struct {
		name string
		log  string
		want []string
	}{
		{"noise around", "starting\n| table | 1 |\n" + blk + "results: /results/shard-0\n", []string{"shard-0"}},
		{"no newline at the end", strings.TrimSuffix(blk, "\n"), []string{"shard-0"}},
		{"two pods concatenated", "pod 0\n" + blk + "pod 1\n" + blk1, []string{"shard-0", "shard-1"}},
		{"kubectl --timestamps", prefixed("2026-12-01T13:00:0N.12345Z "), []string{"shard-0"}},
		{"kubectl --prefix --timestamps", prefixed("[pod/sb-0-x/servebench] 2026-12-01T13:00:00Z "), []string{"shard-0"}},
		{"stderr lines inside", withStray, []string{"shard-0"}},
		{"CRLF", strings.ReplaceAll(blk, "\n", "\r\n"), []string{"shard-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, blocks, err := extract(t, tc.log)
			if err != nil {
				t.Fatal(err)
			}
			if len(blocks) != len(tc.want) {
				t.Fatalf("%d blocks, want %q", len(blocks), tc.want)
			}
			for i, b := range blocks {
				if b.Name != tc.want[i] {
					t.Errorf("block %d named %q, want %q", i, b.Name, tc.want[i])
				}
				checkFiles(t, b, files)
			}
		})
	}
}

// TestRefused: a log whose block is cut, damaged or absent is refused
// with an InputError naming the file and the line.
func TestRefused(t *testing.T) {
	blk, _ := block(t, "shard-2")
	lines := strings.Split(strings.TrimSuffix(blk, "\n"), "\n")
	join := func(ls []string) string { return strings.Join(ls, "\n") + "\n" }
	n := len(lines)
	flipped := append([]string{}, lines...)
	c := "A"
	if flipped[3][10] == 'A' {
		c = "B"
	}
	flipped[3] = flipped[3][:10] + c + flipped[3][11:]
	for _, tc := range []struct {
		name string
		log  string
		line int
		want string
	}{
		{"cut after a few lines", "x\n" + join(lines[:4]), 5, "block shard-2 begun at line 2 is cut short here: no END line"},
		{"cut mid-line", "x\n" + join(lines[:3]) + lines[3][:30], 5, "body line of 30 characters"},
		{"a body line lost", join(append(append([]string{}, lines[:2]...), lines[3:]...)), 1, "bytes decoded, its checksum line says"},
		{"a character changed", join(flipped), 1, "SHA-256"},
		{"a short line inside", join(append(append(append([]string{}, lines[:2]...), lines[2][:40]), lines[3:]...)), 3, "shorter than 76 characters"},
		{"no checksum line", join(append(append([]string{}, lines[:n-2]...), lines[n-1])), n - 1, "no checksum line"},
		{"a second BEGIN inside", join(lines[:3]) + blk, 1, "no END line before the next BEGIN at line 4"},
		{"END of another block", join(lines[:n-1]) + strings.Replace(lines[n-1], "shard-2", "shard-3", 1) + "\n", n, "does not close block shard-2"},
		{"no block", "just a table\n", 0, "no SERVEBENCH RESULTS block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _, err := extract(t, tc.log)
			var ie *result.InputError
			if !errors.As(err, &ie) || ie.Path != path || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want an InputError at %s:%d saying %q", err, path, tc.line, tc.want)
			}
			if !strings.HasPrefix(err.Error(), path) {
				t.Errorf("error %q does not start with the file", err)
			}
		})
	}
}

// TestUnsafeEntries: a block whose checksum holds but whose tar names a
// path outside its directory, or a link, is refused; nothing is written
// outside.
func TestUnsafeEntries(t *testing.T) {
	for _, hdr := range []*tar.Header{
		{Name: "../escape", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		{Name: "sub/file", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
	} {
		var payload bytes.Buffer
		zw := gzip.NewWriter(&payload)
		tw := tar.NewWriter(zw)
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			tw.Write([]byte("x"))
		}
		tw.Close()
		zw.Close()
		sum := sha256.Sum256(payload.Bytes())
		log := fmt.Sprintf("%sbad%s\n%s\nsha256:%s bytes:%d\n%sbad%s\n", beginMarker, markerEnd,
			regexp.MustCompile(`.{1,76}`).ReplaceAllString(base64.StdEncoding.EncodeToString(payload.Bytes()), "$0\n"),
			hex.EncodeToString(sum[:]), payload.Len(), endMarker, markerEnd)
		log = strings.Replace(log, "\n\n", "\n", 1)
		_, _, err := extract(t, log)
		if err == nil || !strings.Contains(err.Error(), "expected a plain file name") {
			t.Errorf("entry %q: error %v, want it refused", hdr.Name, err)
		}
	}
}

// FuzzExtract: any log is either read or refused with an InputError,
// never a panic.
func FuzzExtract(f *testing.F) {
	dir := f.TempDir()
	os.WriteFile(filepath.Join(dir, "a"), []byte("hello\n"), 0o644)
	var b bytes.Buffer
	if err := Write(&b, "s", dir, []string{"a"}); err != nil {
		f.Fatal(err)
	}
	f.Add(b.String())
	f.Add("noise\n" + b.String()[:40])
	f.Add(beginMarker + "x-----\nsha256:00 bytes:1\n" + endMarker + "x-----\n")
	f.Fuzz(func(t *testing.T, log string) {
		_, blocks, err := extract(t, log)
		var ie *result.InputError
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("error %v is not an InputError", err)
		}
		for _, b := range blocks {
			for _, name := range b.Files {
				if filepath.Base(name) != name {
					t.Fatalf("unpacked %q", name)
				}
			}
		}
	})
}

// BenchmarkRoundTrip writes a 16 MiB requests.jsonl-like file as a block
// and reads it back, reporting MB/s of the file through each side: what
// --results-to-log adds after a run and a merge from logs adds before it.
func BenchmarkRoundTrip(b *testing.B) {
	dir := b.TempDir()
	var body bytes.Buffer
	for i := 0; body.Len() < 16<<20; i++ {
		fmt.Fprintf(&body, `{"index":%d,"start":"2026-12-01T13:00:%02d.%09dZ","e2e_s":%d.%06d,"output_tokens":64,"token_gaps":[%d,%d,%d]}`+"\n",
			i, i%60, (i*7919)%1000000000, i%7, (i*104729)%1000003, i%13, i%17, i%19)
	}
	os.WriteFile(filepath.Join(dir, "requests.jsonl"), body.Bytes(), 0o644)
	log := filepath.Join(b.TempDir(), "pod.log")
	var wt, rt time.Duration
	for b.Loop() {
		f, _ := os.Create(log)
		t0 := time.Now()
		if err := Write(f, "shard-0", dir, []string{"requests.jsonl"}); err != nil {
			b.Fatal(err)
		}
		f.Close()
		t1 := time.Now()
		if _, err := Extract(log, b.TempDir()); err != nil {
			b.Fatal(err)
		}
		wt, rt = wt+t1.Sub(t0), rt+time.Since(t1)
	}
	mb := float64(body.Len()) / 1e6 * float64(b.N)
	fi, _ := os.Stat(log)
	b.ReportMetric(mb/wt.Seconds(), "write-MB/s")
	b.ReportMetric(mb/rt.Seconds(), "read-MB/s")
	b.ReportMetric(float64(fi.Size())/float64(body.Len()), "log/file")
}
