package launch

import "sync"

// maxLine caps one buffered log line; the rest of a longer line is dropped
// from parsing (the log file still gets every byte).
const maxLine = 64 << 10

// lineSplitter cuts a byte stream into lines at '\n', '\r\n' and lone '\r'
// (tqdm redraws its progress bar with '\r'). Segments split by '\r' share
// their line's number, so numbers match what an editor shows.
type lineSplitter struct {
	buf     []byte
	no      int  // number of the line being assembled, minus one
	afterCR bool // the last byte was '\r': a following '\n' ends nothing new
}

// feed splits p and calls emit for every completed line. emit must not keep line.
func (s *lineSplitter) feed(p []byte, emit func(line []byte, no int)) {
	for _, c := range p {
		switch c {
		case '\n':
			if !s.afterCR || len(s.buf) > 0 {
				s.emit(emit)
			}
			s.no++
			s.afterCR = false
		case '\r':
			s.emit(emit)
			s.afterCR = true
		default:
			s.afterCR = false
			if len(s.buf) < maxLine {
				s.buf = append(s.buf, c)
			}
		}
	}
}

func (s *lineSplitter) emit(emit func([]byte, int)) {
	emit(s.buf, s.no+1)
	s.buf = s.buf[:0]
}

// flush emits a last line that had no line break.
func (s *lineSplitter) flush(emit func([]byte, int)) {
	if len(s.buf) > 0 {
		s.emit(emit)
	}
}

// ring keeps the last n log lines for error messages. Safe for concurrent use.
type ring struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

func newRing(n int) *ring { return &ring{lines: make([]string, n)} }

func (r *ring) add(line string) {
	r.mu.Lock()
	r.lines[r.next] = line
	r.next++
	if r.next == len(r.lines) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// tail returns up to n of the last lines, oldest first.
func (r *ring) tail(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := r.next
	if r.full {
		size = len(r.lines)
	}
	if n > size {
		n = size
	}
	if n < 0 {
		n = 0
	}
	out := make([]string, 0, n)
	for i := size - n; i < size; i++ {
		j := i
		if r.full {
			j = (r.next + i) % len(r.lines)
		}
		out = append(out, r.lines[j])
	}
	return out
}
