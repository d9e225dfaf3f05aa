package result

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// eventsCases are inputs for TestEventsUnmarshal and FuzzEventsUnmarshal's
// seed corpus: what the writer makes, and what encoding/json must judge.
var eventsCases = []string{
	`[[0.0123,1],[0.0275,2],[1e-3,1]]`, // as RecordWriter writes them
	`[ [ 1 , 2 ] , [3,4] ]`,            // spaces
	`[]`, `null`, ` null `,
	`[[-0.5,0],[1E+2,3.25e-1]]`,
	`[[1,2,3]]`, `[[1]]`, `[[1,2],]`, `[1,2]`, `[[01,2]]`, `[[1.,2]]`, `[[+1,2]]`, `[[1e400,2]]`,
	`[["1",2]]`, `[[1,2]`, `{}`, `[[1,2]] x`, `nul`,
}

// TestEventsUnmarshal: Events decodes exactly as encoding/json decodes
// [][2]float64 (values, and whether it is an error), inside a Record too.
func TestEventsUnmarshal(t *testing.T) {
	for _, in := range eventsCases {
		checkEventsLikeJSON(t, in)
	}
	var rec Record
	if err := json.Unmarshal([]byte(`{"run":"a","events":[[0.5,1],[0.75,2]]}`), &rec); err != nil ||
		!slices.Equal(rec.Events, Events{{0.5, 1}, {0.75, 2}}) {
		t.Errorf("record events %v, %v", rec.Events, err)
	}
}

func FuzzEventsUnmarshal(f *testing.F) {
	for _, in := range eventsCases {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in string) { checkEventsLikeJSON(t, in) })
}

func checkEventsLikeJSON(t *testing.T, in string) {
	t.Helper()
	var want [][2]float64
	werr := json.Unmarshal([]byte(in), &want)
	var got Events
	gerr := json.Unmarshal([]byte(in), &got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: error %v, encoding/json's %v", in, gerr, werr)
	}
	if werr != nil {
		return
	}
	if (want == nil) != (got == nil) || len(want) != len(got) {
		t.Fatalf("%q: %v, encoding/json %v", in, got, want)
	}
	for i := range want {
		for k := range 2 {
			if math.Float64bits(want[i][k]) != math.Float64bits(got[i][k]) {
				t.Fatalf("%q: event %d = %v, encoding/json %v", in, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkRecordUnmarshal decodes a record of 128 events, as reading
// requests.jsonl back does for each line.
func BenchmarkRecordUnmarshal(b *testing.B) {
	benchUnmarshal(b, func() any { return new(Record) })
}

// BenchmarkRecordUnmarshalPlain is BenchmarkRecordUnmarshal with
// encoding/json's own decoding of the events, the floor Events must beat.
func BenchmarkRecordUnmarshalPlain(b *testing.B) {
	type plain struct {
		Run    string       `json:"run"`
		Stream bool         `json:"stream"`
		E2ES   float64      `json:"e2e_s"`
		Events [][2]float64 `json:"events"`
	}
	benchUnmarshal(b, func() any { return new(plain) })
}

// benchUnmarshal decodes a record line of 128 events into what into makes.
func benchUnmarshal(b *testing.B, into func() any) {
	rec := Record{Run: "streaming", Stream: true, E2ES: 1.5}
	for i := range 128 {
		rec.Events = append(rec.Events, [2]float64{0.01234567 * float64(i+1), 1})
	}
	line, err := json.Marshal(&rec)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for range b.N {
		if err := json.Unmarshal(line, into()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecordReaderSkipEvents: with SkipEvents a record reads as it would
// whole but for its events, left nil, and the line Next returns decodes to
// the whole record.
func TestRecordReaderSkipEvents(t *testing.T) {
	in := `{"run":"a","index":3,"stream":true,"e2e_s":1.5,"events":[[0.25,1],[0.5,2]],"output_tokens":3,"finish_reason":"length"}` + "\n"
	var whole, skipped Record
	if err := json.Unmarshal([]byte(in), &whole); err != nil {
		t.Fatal(err)
	}
	rr := NewRecordReader("requests.jsonl", strings.NewReader(in))
	rr.SkipEvents = true
	line, err := rr.Next(&skipped)
	if err != nil {
		t.Fatal(err)
	}
	if skipped.Events != nil || skipped.E2ES != 1.5 || skipped.Index != 3 || skipped.OutputTokens != 3 || skipped.FinishReason != "length" {
		t.Errorf("skipped = %+v: want the record without its events", skipped)
	}
	skipped.Events = whole.Events
	if !reflect.DeepEqual(skipped, whole) {
		t.Errorf("read without events %+v, whole %+v: want equal but for the events", skipped, whole)
	}
	var again Record
	if err := json.Unmarshal(line, &again); err != nil || !reflect.DeepEqual(again, whole) {
		t.Errorf("the returned line decodes to %+v, %v", again, err)
	}
}
