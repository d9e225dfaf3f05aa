package bench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/servebench/servebench/bench/stats"
)

// column is one quantity's per-request samples: in memory, or, for a
// bounded run (spill), appended through a buffer to a temporary file of
// little-endian float64s, so that the run's memory does not grow with its
// length. Its summary reads the file back whole (8 MB per million
// samples) only when asked, one column at a time, so it stays exact.
type column struct {
	xs  []float64
	f   *os.File // nil: in memory
	w   *bufio.Writer
	n   int
	err error // the first write error: the summary is then absent
}

// spill makes c write its samples to a new file in dir ("": the system's
// temporary directory). On failure c stays in memory.
func (c *column) spill(dir string) error {
	f, err := os.CreateTemp(dir, ".servebench-samples-*")
	if err != nil {
		return err
	}
	c.f, c.w = f, bufio.NewWriterSize(f, 32<<10)
	return nil
}

func (c *column) add(x float64) {
	c.n++
	if c.f == nil {
		c.xs = append(c.xs, x)
		return
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(x))
	if _, err := c.w.Write(b[:]); err != nil && c.err == nil {
		c.err = err
	}
}

// addPos adds x when it is positive (an absent timing is 0).
func (c *column) addPos(x float64) {
	if x > 0 {
		c.add(x)
	}
}

// summary is stats.Summarize of the samples; nil without any (or when the
// file could not be written or read back). Spilled samples are read into
// *buf, grown as needed, which the columns of one tally share: reading
// them back costs one column's size, not one per column, nor garbage.
func (c *column) summary(buf *[]float64) *stats.Summary {
	if c.f == nil {
		return stats.Summarize(c.xs)
	}
	xs, err := c.values(*buf)
	if err != nil {
		return nil
	}
	*buf = xs
	return stats.SummarizeInPlace(xs)
}

// values is the samples in the order added: the memory's own slice, or
// the file read back into dst's array (grown as needed); an error is also
// kept in c.err.
func (c *column) values(dst []float64) ([]float64, error) {
	if c.f == nil {
		return c.xs, nil
	}
	xs, err := c.load(dst)
	if err != nil && c.err == nil {
		c.err = err
	}
	return xs, err
}

// load reads the spilled samples back.
func (c *column) load(dst []float64) ([]float64, error) {
	if c.err != nil {
		return nil, c.err
	}
	if err := c.w.Flush(); err != nil {
		return nil, err
	}
	if _, err := c.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	xs := slices.Grow(dst[:0], c.n)[:c.n]
	r := bufio.NewReaderSize(c.f, 32<<10)
	var b [8]byte
	for i := range xs {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("%s: sample %d of %d: %w", c.f.Name(), i+1, c.n, err)
		}
		xs[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	}
	if _, err := c.f.Seek(0, io.SeekEnd); err != nil { // later samples append
		return nil, err
	}
	return xs, nil
}

// close removes c's file, if any.
func (c *column) close() {
	if c.f != nil {
		c.f.Close()
		os.Remove(c.f.Name())
		c.f, c.w = nil, nil
	}
}
