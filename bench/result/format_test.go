package result

import "testing"

func TestFormatCount(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"},
		{999, "999"},
		{1000, "1,000"},
		{77744, "77,744"},        // vLLM's "GPU KV cache size: 77,744 tokens"
		{1234567, "1,234,567"},   // two separators
		{-1234567, "-1,234,567"}, // the sign before the groups
	} {
		if got := FormatCount(c.n); got != c.want {
			t.Errorf("FormatCount(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
