package store

import (
	"os"
	"testing"
)

// TestSpillNamesNothing: a spilled column's file is named nowhere in its
// directory from the moment Spill returns (so no kill can leave it), and
// still gives back every sample written through it.
func TestSpillNamesNothing(t *testing.T) {
	dir := t.TempDir()
	var c Column
	if err := c.Spill(dir); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("after Spill the directory names %d entries, want none: %v", len(entries), entries)
	}
	const n = 3 * spillBuf / 8 // past the buffer, so the file is written
	for i := range n {
		c.Add(float64(i))
	}
	var sum float64
	if err := c.Each(func(x float64) { sum += x }); err != nil {
		t.Fatal(err)
	}
	if want := float64(n*(n-1)) / 2; sum != want {
		t.Fatalf("samples read back sum to %g, want %g", sum, want)
	}
}
