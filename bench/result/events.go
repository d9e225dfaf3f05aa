package result

import (
	"encoding/json"
	"strconv"
	"unsafe"
)

// Events are a record's content events: [seconds from start, tokens] per
// event, in order.
type Events [][2]float64

// UnmarshalJSON decodes [[t,k],...] number by number, without encoding/json's
// reflection per element: the events are most of requests.jsonl, and
// reading a run's records back (report, merge, the charts of a bounded
// run) spent 70% of its CPU in encoding/json's generic array decoding
// (pprof of report.ChartRecords over 10,000 records of 128 streamed
// tokens). Anything else than arrays of two JSON numbers goes to
// encoding/json, so its values and errors are encoding/json's.
func (e *Events) UnmarshalJSON(b []byte) error {
	if evs, ok := parseEvents(b, (*e)[:0]); ok {
		*e = evs
		return nil
	}
	var plain [][2]float64
	if err := json.Unmarshal(b, &plain); err != nil {
		return err
	}
	*e = plain
	return nil
}

// parseEvents parses b as null or an array of two-number arrays, appending
// to out; false for anything else (other JSON, or a number out of range).
func parseEvents(b []byte, out Events) (Events, bool) {
	i := skipSpace(b, 0)
	if len(b)-i >= 4 && string(b[i:i+4]) == "null" {
		return nil, skipSpace(b, i+4) == len(b)
	}
	if i == len(b) || b[i] != '[' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' { // empty, not absent: encoding/json's []
		return append(Events{}, out...), skipSpace(b, i+1) == len(b)
	}
	for {
		var ev [2]float64
		var ok bool
		if i >= len(b) || b[i] != '[' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		if ev[0], i, ok = parseNumber(b, i); !ok {
			return nil, false
		}
		if i = skipSpace(b, i); i >= len(b) || b[i] != ',' {
			return nil, false
		}
		if ev[1], i, ok = parseNumber(b, skipSpace(b, i+1)); !ok {
			return nil, false
		}
		if i = skipSpace(b, i); i >= len(b) || b[i] != ']' {
			return nil, false
		}
		out = append(out, ev)
		if i = skipSpace(b, i+1); i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// parseNumber parses the JSON number at b[i:] (RFC 8259 grammar: -?
// int frac? exp?) and returns it and the index after it.
func parseNumber(b []byte, i int) (float64, int, bool) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, i, false
	}
	if i < len(b) && b[i] == '.' {
		if j := digits(b, i+1); j > i+1 {
			i = j
		} else {
			return 0, i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, i, false
		}
		i = j
	}
	// ParseFloat keeps no reference to its argument (its errors copy it).
	v, err := strconv.ParseFloat(unsafe.String(&b[start], i-start), 64)
	return v, i, err == nil
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
