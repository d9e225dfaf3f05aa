package store

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/servebench/servebench/bench/stats"
)

// Column is one quantity's per-request samples: in memory, or, for a
// bounded run (Spill), appended through a buffer to a temporary file of
// little-endian float64s, so that the run's memory does not grow with its
// length. Its summary reads the file in passes (stats.Selector), never
// whole, so it stays exact in memory that does not grow with the samples.
// When the file cannot be written (a full disk), the samples not in it
// stay in memory (WriteErr says why) and the summary still counts them.
type Column struct {
	xs  []float64 // in memory; spilled: the samples after the file's
	f   *os.File  // nil: in memory
	buf []byte    // spilled: samples encoded, not yet written
	// onFile is how many samples the file holds; the rest are in buf or,
	// after a write failure, in xs.
	onFile int
	N      int
	// WriteErr is the first error writing the file: later samples stay
	// in memory, and nothing is lost.
	WriteErr error
	Err      error // the first read error: the summary is then absent
	// named: the file could not be unlinked while open (Windows), so
	// close removes it by name.
	named bool
}

// spillBuf is how many bytes of samples a spilled column gathers before
// writing them.
const spillBuf = 32 << 10

// Spill makes c write its samples to a new file in dir ("": the system's
// temporary directory) that has no name (Linux), or else is unlinked at
// once where the system allows it (the open file stays readable), so that
// no kill leaves it behind. On failure c stays in memory.
func (c *Column) Spill(dir string) error {
	f, err := openUnnamed(dir)
	if err != nil {
		if f, err = os.CreateTemp(dir, ".servebench-samples-*"); err != nil {
			return err
		}
		c.named = os.Remove(f.Name()) != nil
	}
	c.f, c.buf = f, make([]byte, 0, spillBuf)
	return nil
}

func (c *Column) Add(x float64) {
	c.N++
	if c.f == nil || c.WriteErr != nil {
		c.xs = append(c.xs, x)
		return
	}
	c.buf = binary.LittleEndian.AppendUint64(c.buf, math.Float64bits(x))
	if len(c.buf)+8 > cap(c.buf) {
		c.flush()
	}
}

// flush writes the buffered samples; on a failure those not written move
// to memory, the file is cut back to its whole samples, and WriteErr keeps
// the error.
func (c *Column) flush() {
	if len(c.buf) == 0 || c.WriteErr != nil {
		return
	}
	n, err := c.f.Write(c.buf)
	whole := n / 8
	c.onFile += whole
	if err != nil {
		c.WriteErr = fmt.Errorf("writing samples to %s: %w", c.f.Name(), err)
		for b := c.buf[whole*8:]; len(b) >= 8; b = b[8:] {
			c.xs = append(c.xs, math.Float64frombits(binary.LittleEndian.Uint64(b)))
		}
		_ = c.f.Truncate(int64(c.onFile) * 8)
	}
	c.buf = c.buf[:0]
}

// AddPos adds x when it is positive (an absent timing is 0).
func (c *Column) AddPos(x float64) {
	if x > 0 {
		c.Add(x)
	}
}

// Summary is stats.Summarize of the samples; nil without any (or when the
// file could not be read back: c.Err says why). Spilled samples are read
// in passes by sel, whose buffers the columns of one tally share.
func (c *Column) Summary(sel *stats.Selector) *stats.Summary {
	if c.f == nil {
		return stats.Summarize(c.xs)
	}
	s, err := sel.Summarize(c.N, c.Each)
	if err != nil && c.Err == nil {
		c.Err = err
	}
	if err != nil {
		return nil
	}
	return s
}

// Each calls fn with every sample in the order added (a stats.Pass):
// from memory, or reading the file from its start, then those in memory;
// later samples append. A read error is also kept in c.Err.
func (c *Column) Each(fn func(float64)) error {
	if c.f != nil && c.Err == nil {
		c.Err = c.read(fn)
	}
	if c.Err != nil {
		return c.Err
	}
	for _, x := range c.xs {
		fn(x)
	}
	return nil
}

// read is Each over the file and the buffer (flushed first).
func (c *Column) read(fn func(float64)) error {
	c.flush()
	if _, err := c.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(c.f, spillBuf)
	var b [8]byte
	for i := range c.onFile {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return fmt.Errorf("%s: sample %d of %d: %w", c.f.Name(), i+1, c.onFile, err)
		}
		fn(math.Float64frombits(binary.LittleEndian.Uint64(b[:])))
	}
	_, err := c.f.Seek(0, io.SeekEnd)
	return err
}

// Close closes c's file, if any, and removes it if it still has a name.
func (c *Column) Close() {
	if c.f != nil {
		c.f.Close()
		if c.named {
			os.Remove(c.f.Name())
		}
		c.f, c.buf = nil, nil
	}
}

// columns are the columns of one accumulator (Tally, EngineAcc): spilled,
// closed and checked together.
type columns []*Column

// spill spills every column to dir; on failure it closes those already
// spilled, so that all stay in memory.
func (cs columns) spill(dir string) error {
	for _, c := range cs {
		if err := c.Spill(dir); err != nil {
			cs.close()
			return err
		}
	}
	return nil
}

func (cs columns) close() {
	for _, c := range cs {
		c.Close()
	}
}

// err is the first column's read error (see Column.Err).
func (cs columns) err() error {
	for _, c := range cs {
		if c.Err != nil {
			return c.Err
		}
	}
	return nil
}

// writeErr is the first column's write error (see Column.WriteErr).
func (cs columns) writeErr() error {
	for _, c := range cs {
		if c.WriteErr != nil {
			return c.WriteErr
		}
	}
	return nil
}
