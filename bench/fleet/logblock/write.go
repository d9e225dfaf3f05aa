package logblock

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Frame markers: a BEGIN line is beginMarker NAME markerEnd.
const (
	beginMarker = "-----BEGIN SERVEBENCH RESULTS "
	endMarker   = "-----END SERVEBENCH RESULTS "
	markerEnd   = "-----"
)

// lineChars is the length of a body line (MIME's 76: 57 bytes a line).
const lineChars = 76

// Write writes files (names inside dir, no directories) as one block named
// name to w. The block is streamed: memory does not grow with the files.
func Write(w io.Writer, name, dir string, files []string) error {
	if err := checkName(name); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := fmt.Fprintf(bw, "%s%s%s\n", beginMarker, name, markerEnd); err != nil {
		return err
	}
	lw := &lineWriter{w: bw}
	enc := base64.NewEncoder(base64.StdEncoding, lw)
	sum := &counter{h: sha256.New(), w: enc}
	zw := gzip.NewWriter(sum)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := addFile(tw, dir, f); err != nil {
			return err
		}
	}
	for _, c := range []io.Closer{tw, zw, enc} {
		if err := c.Close(); err != nil {
			return err
		}
	}
	if lw.n > 0 {
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	fmt.Fprintf(bw, "sha256:%s bytes:%d\n%s%s%s\n", hex.EncodeToString(sum.h.Sum(nil)), sum.n, endMarker, name, markerEnd)
	return bw.Flush()
}

// checkName refuses a name that would not read back as one field.
func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n") || strings.Contains(name, markerEnd) {
		return fmt.Errorf("results block name %q: expected one word without spaces or -----", name)
	}
	return nil
}

// addFile writes dir/name into tw as a regular file called name.
func addFile(tw *tar.Writer, dir, name string) error {
	if filepath.Base(name) != name {
		return fmt.Errorf("results block: %q is not a file name inside the directory", name)
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("results block: %s is not a regular file", f.Name())
	}
	// PAX keeps the modification time to the nanosecond: a saved /metrics
	// snapshot is dated by it (scrape.ParseFile).
	hdr := &tar.Header{Name: name, Mode: 0o644, Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	// A file still growing (it should not be) must not overrun its header.
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return fmt.Errorf("results block: reading %s: %w", f.Name(), err)
	}
	return nil
}

// counter hashes and counts the bytes on their way to w.
type counter struct {
	h hash.Hash
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	c.h.Write(p)
	c.n += int64(len(p))
	return c.w.Write(p)
}

// lineWriter breaks its input into lines of lineChars characters.
type lineWriter struct {
	w *bufio.Writer
	n int // characters on the current line
}

func (l *lineWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		k := min(lineChars-l.n, len(p))
		if _, err := l.w.Write(p[:k]); err != nil {
			return total - len(p), err
		}
		p, l.n = p[k:], l.n+k
		if l.n == lineChars {
			if err := l.w.WriteByte('\n'); err != nil {
				return total - len(p), err
			}
			l.n = 0
		}
	}
	return total, nil
}
