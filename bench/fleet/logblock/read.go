package logblock

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// Block is one block read back from a log.
type Block struct {
	Name  string
	Line  int    // its BEGIN line in the log (1-based)
	Dir   string // where its files were unpacked
	Files []string
}

// maxLine bounds one log line, so a log that is not one cannot exhaust
// memory.
const maxLine = 16 << 20

// Extract reads every block of the log at path and unpacks the k-th into
// root/k (created). A block cut short, damaged or failing its checksum, or
// a log without any block, is a *result.InputError naming path and the
// line.
func Extract(path, root string) ([]Block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &result.InputError{Path: path, Err: err}
	}
	defer f.Close()
	r := &reader{path: path, root: root}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	for sc.Scan() {
		r.line++
		if err := r.next(sc.Text()); err != nil {
			r.abandon()
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		r.abandon()
		return nil, &result.InputError{Path: path, Line: r.line + 1, Err: err}
	}
	if r.cur != nil {
		err := r.fail(r.line, "block %s begun at line %d is cut short here: no END line (the log is truncated: kubectl logs --tail, or log rotation?)", r.cur.name, r.cur.line)
		r.abandon()
		return nil, err
	}
	if len(r.blocks) == 0 {
		return nil, &result.InputError{Path: path, Err: errors.New("no SERVEBENCH RESULTS block: expected the log of a run given --results-to-log")}
	}
	return r.blocks, nil
}

// reader is Extract's state.
type reader struct {
	path, root string
	line       int
	blocks     []Block
	cur        *pending
}

// pending is the block being read: its decoded body goes to a file beside
// where it will be unpacked, hashed on the way.
type pending struct {
	name    string
	line    int // BEGIN
	prefix  int // fields kubectl put before the marker (--timestamps, --prefix)
	dir     string
	body    *os.File
	h       hash.Hash
	n       int64
	short   int // a body line shorter than a full one: only the last may be
	foreign int // the first line inside that is not the block's
	sum     string
	size    int64
	sumLine int
	buf     []byte
}

func (r *reader) fail(line int, format string, args ...any) error {
	return &result.InputError{Path: r.path, Line: line, Err: fmt.Errorf(format, args...)}
}

// next reads one log line.
func (r *reader) next(line string) error {
	if i := strings.Index(line, beginMarker); i >= 0 {
		return r.begin(line, i)
	}
	p := r.cur
	if p == nil {
		return nil // the log around the blocks
	}
	if i := strings.Index(line, endMarker); i >= 0 {
		return r.end(line[i:])
	}
	fs := strings.Fields(line)
	if len(fs) <= p.prefix {
		p.noteForeign(r.line)
		return nil
	}
	fs = fs[p.prefix:]
	if len(fs) == 2 && strings.HasPrefix(fs[0], "sha256:") && strings.HasPrefix(fs[1], "bytes:") {
		size, err := strconv.ParseInt(strings.TrimPrefix(fs[1], "bytes:"), 10, 64)
		if err != nil || p.sumLine != 0 {
			return r.fail(r.line, "block %s: damaged checksum line %q", p.name, strings.Join(fs, " "))
		}
		p.sum, p.size, p.sumLine = strings.TrimPrefix(fs[0], "sha256:"), size, r.line
		return nil
	}
	if len(fs) != 1 || !isBase64(fs[0]) {
		p.noteForeign(r.line) // another writer's line between the block's
		return nil
	}
	return r.body(fs[0])
}

func (p *pending) noteForeign(line int) {
	if p.foreign == 0 {
		p.foreign = line
	}
}

// begin opens a block at the marker at line[i:].
func (r *reader) begin(line string, i int) error {
	if p := r.cur; p != nil {
		return r.fail(p.line, "block %s has no END line before the next BEGIN at line %d: the log is cut short inside it", p.name, r.line)
	}
	name, ok := strings.CutSuffix(strings.TrimSpace(line[i+len(beginMarker):]), markerEnd)
	if !ok || checkName(name) != nil {
		return r.fail(r.line, "damaged BEGIN line %q", line[i:])
	}
	dir := filepath.Join(r.root, strconv.Itoa(len(r.blocks)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	body, err := os.Create(filepath.Join(dir, ".body"))
	if err != nil {
		return err
	}
	r.cur = &pending{name: name, line: r.line, prefix: len(strings.Fields(line[:i])), dir: dir, body: body, h: sha256.New()}
	return nil
}

// body decodes one body line.
func (r *reader) body(s string) error {
	p := r.cur
	if p.sumLine != 0 {
		return r.fail(r.line, "block %s: body line after its checksum line %d", p.name, p.sumLine)
	}
	if p.short != 0 {
		return r.fail(p.short, "block %s: body line shorter than %d characters before the block's last: cut or damaged", p.name, lineChars)
	}
	if len(s)%4 != 0 {
		return r.fail(r.line, "block %s: body line of %d characters, not whole base64: cut or damaged", p.name, len(s))
	}
	if len(s) < lineChars {
		p.short = r.line
	}
	p.buf = p.buf[:cap(p.buf)]
	if need := base64.StdEncoding.DecodedLen(len(s)); len(p.buf) < need {
		p.buf = make([]byte, need)
	}
	n, err := base64.StdEncoding.Decode(p.buf, []byte(s))
	if err != nil {
		return r.fail(r.line, "block %s: body line is not base64 (%v): damaged", p.name, err)
	}
	p.h.Write(p.buf[:n])
	p.n += int64(n)
	if _, err := p.body.Write(p.buf[:n]); err != nil {
		return fmt.Errorf("unpacking %s: %w", r.path, err)
	}
	return nil
}

// end closes the block at the END marker s, checks it and unpacks it.
func (r *reader) end(s string) error {
	p := r.cur
	name, ok := strings.CutSuffix(strings.TrimSpace(strings.TrimPrefix(s, endMarker)), markerEnd)
	switch {
	case !ok || name != p.name:
		return r.fail(r.line, "END line %q does not close block %s begun at line %d", s, p.name, p.line)
	case p.sumLine == 0:
		return r.fail(r.line, "block %s (from line %d): no checksum line before its END: damaged", p.name, p.line)
	}
	note := ""
	if p.foreign != 0 {
		note = fmt.Sprintf(" (line %d inside it was another writer's and was skipped)", p.foreign)
	}
	if p.n != p.size {
		return r.fail(p.line, "block %s (lines %d-%d): %d bytes decoded, its checksum line says %d: lines lost or damaged%s", p.name, p.line, r.line, p.n, p.size, note)
	}
	if got := hex.EncodeToString(p.h.Sum(nil)); got != p.sum {
		return r.fail(p.line, "block %s (lines %d-%d): SHA-256 %s, its checksum line says %s: damaged%s", p.name, p.line, r.line, got, p.sum, note)
	}
	files, err := unpack(p.body, p.dir)
	if err != nil {
		return r.fail(p.line, "block %s: %v", p.name, err)
	}
	p.body.Close()
	os.Remove(p.body.Name())
	r.blocks = append(r.blocks, Block{Name: p.name, Line: p.line, Dir: p.dir, Files: files})
	r.cur = nil
	return nil
}

// abandon closes a block left open by an error.
func (r *reader) abandon() {
	if p := r.cur; p != nil {
		p.body.Close()
		r.cur = nil
	}
}

// unpack writes the tar.gz in body (from its start) into dir: plain files
// only, each a name without a directory, never one twice, each with its
// modification time.
func unpack(body *os.File, dir string) ([]string, error) {
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bufio.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("not gzip: %w", err)
	}
	tr := tar.NewReader(zr)
	var files []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not a tar: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg || filepath.Base(hdr.Name) != hdr.Name || hdr.Name == "." || hdr.Name == ".." || hdr.Name == ".body" {
			return nil, fmt.Errorf("entry %q: expected a plain file name", hdr.Name)
		}
		path := filepath.Join(dir, hdr.Name)
		if err := writeFile(path, tr); err != nil {
			return nil, err
		}
		if err := os.Chtimes(path, hdr.ModTime, hdr.ModTime); err != nil {
			return nil, err
		}
		files = append(files, hdr.Name)
	}
}

func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// isBase64 reports whether s holds only base64 characters.
func isBase64(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=') {
			return false
		}
	}
	return true
}
