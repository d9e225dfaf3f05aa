package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/servebench/servebench/bench/result"
)

// RemoveCheckpoint deletes dir's checkpoint once results.json holds the
// whole session.
func RemoveCheckpoint(dir string) error {
	err := os.Remove(filepath.Join(dir, result.CheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// WriteJSON writes res as indented JSON to dir/name atomically (a
// temporary file renamed over it), so a reader, or a crash, never sees half
// a file. The runs' windows are encoded one at a time straight into the
// file (encodeResults): a soak's checkpoint, rewritten at every boundary,
// holds every window so far, and encoding it whole in memory made peak RSS
// grow with the run's length (about 20 KB per window, measured).
func WriteJSON(dir, name string, res *result.Results) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	w := bufio.NewWriterSize(f, 64<<10)
	_, err = encodeResults(w, res)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// windowIndent is the indentation of a window in results.json: the
// results object > runs > one run > windows.
var windowIndent = strings.Repeat("  ", 4)

// encodeResults writes what json.MarshalIndent(res, "", "  ") and a
// newline would, byte for byte, holding one window's encoding at a time:
// res is encoded with each run's windows replaced by one marker window
// (index -1 for the first run, -2 for the second...: no real window's),
// and each marker's text is replaced by the run's windows in turn. A
// marker not found alone falls back to encoding res whole (and says so).
// A write error stays in w (bufio.Writer keeps the first), for its Flush.
func encodeResults(w *bufio.Writer, res *result.Results) (whole bool, err error) {
	doc := *res
	doc.Runs = slices.Clone(res.Runs)
	markers := make([][]byte, len(doc.Runs))
	for i := range doc.Runs {
		if len(doc.Runs[i].Windows) == 0 {
			continue
		}
		m := result.Window{Index: -1 - i}
		doc.Runs[i].Windows = []result.Window{m}
		if markers[i], err = json.MarshalIndent(&m, windowIndent, "  "); err != nil {
			return false, err
		}
	}
	b, err := json.MarshalIndent(&doc, "", "  ")
	if err != nil {
		return false, err
	}
	at := make([]int, len(markers)) // where each marker starts in b
	for i, m := range markers {
		if m == nil {
			continue
		}
		if at[i] = bytes.Index(b, m); at[i] < 0 || bytes.Count(b, m) != 1 {
			b, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				return true, err
			}
			w.Write(append(b, '\n'))
			return true, nil
		}
	}
	from := 0
	for i, m := range markers {
		if m == nil {
			continue
		}
		w.Write(b[from:at[i]])
		for k := range res.Runs[i].Windows {
			if k > 0 {
				w.WriteString(",\n" + windowIndent)
			}
			wb, err := json.MarshalIndent(&res.Runs[i].Windows[k], windowIndent, "  ")
			if err != nil {
				return false, err
			}
			w.Write(wb)
		}
		from = at[i] + len(m)
	}
	w.Write(b[from:])
	w.WriteByte('\n')
	return false, nil
}

// WriteResults writes dir/results.json atomically (temp file and rename), so
// a reader never sees half a file.
func WriteResults(dir string, res *result.Results) error {
	return WriteJSON(dir, result.ResultsFile, res)
}
