package scrape

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/prometheus/common/expfmt"
)

// Write writes s in the text exposition format, families sorted by name,
// after a comment naming its source and time. Parse reads it back.
func (s *Snapshot) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# servebench snapshot of %s at %s\n", sourceName(s), s.At.UTC().Format(time.RFC3339Nano))
	names := make([]string, 0, len(s.Families))
	for n, f := range s.Families {
		if f != nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if _, err := expfmt.MetricFamilyToText(bw, s.Families[n]); err != nil {
			return fmt.Errorf("writing %s: %w", n, err)
		}
	}
	return bw.Flush()
}

// WriteFile writes s to path and sets the file's modification time to
// s.At, which ParseFile takes as the snapshot's time: a saved snapshot
// keeps when it was scraped.
func (s *Snapshot) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	werr := s.Write(f)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	return os.Chtimes(path, s.At, s.At)
}
