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
type Column struct {
	xs  []float64
	f   *os.File // nil: in memory
	w   *bufio.Writer
	N   int
	Err error // the first write or read error: the summary is then absent
	// named: the file could not be unlinked while open (Windows), so
	// close removes it by name.
	named bool
}

// Spill makes c write its samples to a new file in dir ("": the system's
// temporary directory), unlinked at once where the system allows it (the
// open file stays readable), so that no kill leaves it behind. On failure
// c stays in memory.
func (c *Column) Spill(dir string) error {
	f, err := os.CreateTemp(dir, ".servebench-samples-*")
	if err != nil {
		return err
	}
	c.named = os.Remove(f.Name()) != nil
	c.f, c.w = f, bufio.NewWriterSize(f, 32<<10)
	return nil
}

func (c *Column) Add(x float64) {
	c.N++
	if c.f == nil {
		c.xs = append(c.xs, x)
		return
	}
	// Encoded in the buffer's free space, flushed first when full: an
	// [8]byte here escapes through Write, 8 bytes of garbage per sample.
	var err error
	if c.w.Available() < 8 {
		err = c.w.Flush()
	}
	if err == nil {
		_, err = c.w.Write(binary.LittleEndian.AppendUint64(c.w.AvailableBuffer(), math.Float64bits(x)))
	}
	if err != nil && c.Err == nil {
		c.Err = err
	}
}

// AddPos adds x when it is positive (an absent timing is 0).
func (c *Column) AddPos(x float64) {
	if x > 0 {
		c.Add(x)
	}
}

// Summary is stats.Summarize of the samples; nil without any (or when the
// file could not be written or read back: c.Err says why). Spilled
// samples are read in passes by sel, whose buffers the columns of one
// tally share.
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
// from memory, or reading the file from its start; later samples append.
// An error is also kept in c.Err.
func (c *Column) Each(fn func(float64)) error {
	if c.f == nil {
		for _, x := range c.xs {
			fn(x)
		}
		return nil
	}
	if c.Err == nil {
		c.Err = c.read(fn)
	}
	return c.Err
}

// read is Each over the file.
func (c *Column) read(fn func(float64)) error {
	if err := c.w.Flush(); err != nil {
		return err
	}
	if _, err := c.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(c.f, 32<<10)
	var b [8]byte
	for i := range c.N {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return fmt.Errorf("%s: sample %d of %d: %w", c.f.Name(), i+1, c.N, err)
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
		c.f, c.w = nil, nil
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

// err is the first column's error (see Column.Err).
func (cs columns) err() error {
	for _, c := range cs {
		if c.Err != nil {
			return c.Err
		}
	}
	return nil
}
