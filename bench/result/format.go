package result

import (
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// counts groups digits in thousands, as vLLM logs its token counts
// (1,234,567). Its Sprintf is safe for concurrent use.
var counts = message.NewPrinter(language.English)

// FormatCount writes a count (the KV cache's tokens, a request's tokens per
// max concurrency) with thousands separators, as the server's own log does,
// for the start-up text and charts.
func FormatCount(n int64) string { return counts.Sprintf("%d", n) }
