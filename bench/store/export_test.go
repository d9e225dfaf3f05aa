package store

import "testing"

// setSelectLimit sets the summaries' selection limit (selectLimit) to n
// until tb ends.
func setSelectLimit(tb testing.TB, n int) {
	old := selectLimit
	selectLimit = n
	tb.Cleanup(func() { selectLimit = old })
}
