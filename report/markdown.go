package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/stats"
)

// Markdown writes report.md for res: the table, the diagnosis ("where is the
// time going") with the two-clocks caveat, the charts (those in charts, by
// file name), start-up, each run's details and reconciliation, and warnings.
// It is a pure function of its arguments.
func Markdown(w io.Writer, res *result.Results, recs []result.Record, charts []Chart) error {
	return markdown(w, res, recs, nil, charts)
}

// markdown is Markdown for records that may be a Sample (s nil: all).
func markdown(w io.Writer, res *result.Results, recs []result.Record, s *Sample, charts []Chart) error {
	res, recs, s = shownAll(res, recs, s)
	var b strings.Builder
	b.WriteString("# servebench report\n\n")
	writeIncomplete(&b, res)
	writeHeader(&b, res)
	embed := func(file string) {
		for _, c := range charts {
			if c.File == file {
				fmt.Fprintf(&b, "![%s](%s)\n\n", c.Title, c.File)
				if c.Note != "" {
					fmt.Fprintf(&b, "_%s_\n\n", c.Note)
				}
			}
		}
	}

	if len(res.Runs) == 0 { // `servebench startup --out DIR`: start-up only
		b.WriteString("## Results\n\nNo benchmark runs: this directory holds a start-up measurement only.\n\n")
		writeWarnings(&b, res)
		writeStartupSection(&b, res, embed)
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("## Results\n\n")
	if err := writeMarkdown(&b, NewTableModelWith(res, TableOptions{Load: true})); err != nil {
		return err
	}
	b.WriteString("\n")
	embed(FileTable)
	writeWarnings(&b, res)
	writeGoodput(&b, res)
	writeSteady(&b, res)
	writeEnergy(&b, res)
	writeUsable(&b, res)
	writePath(&b, PathPairs(res, recs))
	embed(FilePath)

	b.WriteString("## Where is the time going\n\n")
	basis := BasisFor(res)
	th := basis.Thresholds
	for _, run := range res.Runs {
		d := DiagnoseOn(run, basis)
		fmt.Fprintf(&b, "- **%s.**", mdEscape(d.Label))
		for _, f := range d.Findings {
			b.WriteString(" " + f.Text)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n> %s\n\n", TwoClocks(res))
	if th != DefaultThresholds {
		fmt.Fprintf(&b, "_Thresholds scaled for the bundled engine's speed-up: engine TTFT counts as large from %s, "+
			"a gap between engine and client from %s._\n\n", secsText(th.LargeTTFT), secsText(th.LostGap))
	}
	embed(FileTimeline)
	embed(FileTokens)
	embed(FileCDF)
	writeTurnsSection(&b, res, recs, s, embed)
	if isSweep(res) {
		b.WriteString("## Sweep\n\n")
		embed(FileSweep)
	}
	if hasReplicas(res) {
		b.WriteString("## Replicas\n\n")
		embed(FileReplicas)
	}
	writeWindows(&b, res, embed)
	writeStartupSection(&b, res, embed)
	b.WriteString("## Runs\n\n")
	for i := range res.Runs {
		nrec := countRecords(res.Runs[i].Name, recs)
		if rs := s.run(res.Runs[i].Name); rs != nil { // the sample's records are not all of the file's
			nrec = rs.Counts
		}
		writeRun(&b, &res.Runs[i], nrec)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeWarnings writes the Warnings section, when there are any.
func writeWarnings(b *strings.Builder, res *result.Results) {
	if ws := allWarnings(res); len(ws) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, w := range ws {
			fmt.Fprintf(b, "- %s\n", w)
		}
		b.WriteString("\n")
	}
}

// writeStartupSection writes the Start-up section, when start-up was measured.
func writeStartupSection(b *strings.Builder, res *result.Results, embed func(string)) {
	if st := res.Server.Startup; st != nil {
		b.WriteString("## Start-up\n\n")
		writeStartup(b, st)
		embed(FileStartup)
	}
}

func writeHeader(b *strings.Builder, res *result.Results) {
	s := res.Server
	model := s.Model
	if model == "" {
		model = "(model not named)"
	}
	switch {
	case s.Engine == result.EngineOllama:
		fmt.Fprintf(b, "- **Server:** `%s` at %s, Ollama %s (no /metrics)", model, s.BaseURL, orDash(s.Version))
	default:
		fmt.Fprintf(b, "- **Server:** `%s` at %s, metrics dialect %s", model, s.BaseURL, orDash(s.Dialect))
		if s.Version != "" {
			fmt.Fprintf(b, ", version %s", s.Version)
		}
	}
	b.WriteString("\n")
	if len(s.Environment) > 0 {
		kvs := make([]string, 0, len(s.Environment))
		for _, k := range slices.Sorted(maps.Keys(s.Environment)) {
			kvs = append(kvs, fmt.Sprintf("`%s=%s`", k, s.Environment[k]))
		}
		fmt.Fprintf(b, "- **Server environment:** %s\n", strings.Join(kvs, ", "))
	}
	if c := s.PromptTokens; c != nil {
		fmt.Fprintf(b, "- **Prompt tokens:** generated prompts sized by the server's count (%s): %g tokens per generated word, "+
			"%d tokens of %s template (%d with a system prompt)\n", c.Source, c.PerWord, c.Overhead, c.Endpoint, c.SystemOverhead)
	}
	if bd := s.Bundled; bd != nil {
		fmt.Fprintf(b, "- **Bundled engine:** emulating %s running %s, %gx faster than real time (seed %d)\n",
			bd.GPU, bd.Model, bd.Speedup, bd.Seed)
	}
	if s.Command != "" {
		fmt.Fprintf(b, "- **Server command:** `%s`\n", s.Command)
	}
	m := res.Manifest
	if len(m.CommandLine) > 0 {
		fmt.Fprintf(b, "- **Command:** `%s`\n", strings.Join(m.CommandLine, " "))
	}
	writeProvenance(b, m)
	fmt.Fprintf(b, "- **servebench:** %s (%s, %s/%s, %d CPUs)\n\n", orDash(m.Version), orDash(m.Host.GoVersion),
		orDash(m.Host.OS), orDash(m.Host.Arch), m.Host.CPUs)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// thresholdsFor scales the diagnosis thresholds for a bundled engine that
// runs faster than real time.
func thresholdsFor(res *result.Results) Thresholds {
	if result.ClockOf(res).Modelled() {
		return DefaultThresholds // the figures are in the emulated hardware's time
	}
	if bd := res.Server.Bundled; bd != nil && bd.Speedup > 1 {
		return DefaultThresholds.Scaled(bd.Speedup)
	}
	return DefaultThresholds
}

// allWarnings are the results' warnings, then each run's, prefixed by run,
// each once: results.json also lists a run's warnings among its own as
// "<run>: <warning>" (session and merge copy them there), which would
// otherwise show twice.
func allWarnings(res *result.Results) []string {
	copied := map[string]bool{}
	for _, r := range res.Runs {
		for _, w := range r.Warnings {
			copied[r.Name+": "+w] = true
		}
	}
	var ws []string
	seen := map[string]bool{}
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			ws = append(ws, w)
		}
	}
	for _, w := range res.Warnings {
		if !copied[w] {
			add(w)
		}
	}
	for _, r := range res.Runs {
		for _, w := range r.Warnings {
			add(fmt.Sprintf("%s: %s", RunLabel(r.Name), w))
		}
	}
	return ws
}

func writeStartup(b *strings.Builder, st *result.Startup) {
	b.WriteString("| phase | seconds since spawn |\n|---|---:|\n")
	row := func(name string, v *float64) {
		if v != nil {
			fmt.Fprintf(b, "| %s | %.2f |\n", name, *v)
		}
	}
	row("weights loaded (from the log)", st.WeightsLoadedAtS)
	row("port accepts connections", st.PortOpenS)
	row("/health OK", st.HealthOKS)
	row("model listed in /v1/models", st.ModelListedS)
	row("model loaded (on the first request: the engine's load_duration)", st.ModelLoadedAtS)
	row("first 1-token completion", st.FirstTokenS)
	b.WriteString("\n")
	var facts []string
	if st.WeightsLoadS != nil {
		facts = append(facts, fmt.Sprintf("loading weights took %.2f s (log)", *st.WeightsLoadS))
	}
	if st.InitEngineS != nil {
		facts = append(facts, fmt.Sprintf("init engine took %.2f s (log)", *st.InitEngineS))
	}
	if f := startupFacts(st); f != "" {
		facts = append(facts, f)
	}
	if f := readinessFact(st); f != "" {
		facts = append(facts, f)
	}
	for _, f := range facts {
		fmt.Fprintf(b, "- %s\n", f)
	}
	if len(facts) > 0 {
		b.WriteString("\n")
	}
}

// readinessFact is the start-up's lesson where the figures show it: a
// server that loads its model on the first request (Ollama) answers and
// lists the model before it can serve; one that loads at start (vLLM) is
// ready well after its weights are in. "" where they do not show it (a
// gap under 10% of the start-up, or nothing to compare).
func readinessFact(st *result.Startup) string {
	switch {
	case st.ModelLoadS != nil && st.HealthOKS != nil && st.FirstTokenS != nil:
		return fmt.Sprintf("the model loaded on the first request (%s, the engine's load_duration): the server answered after %s "+
			"and gave its first token after %s: a live server that lists the model is not yet a ready one",
			secsText(*st.ModelLoadS), secsText(*st.HealthOKS), secsText(*st.FirstTokenS))
	case st.HealthOKS != nil && st.WeightsLoadS != nil && *st.HealthOKS-*st.WeightsLoadS >= 0.1**st.HealthOKS:
		return fmt.Sprintf("ready after %s although weights took only %s: a live process is not a ready server",
			secsText(*st.HealthOKS), secsText(*st.WeightsLoadS))
	}
	return ""
}

// warmupText says the workload's warm-up in words.
func warmupText(n int) string {
	switch n {
	case 0:
		return "no warm-up"
	case 1:
		return "1 warm-up request first (left out of every figure)"
	}
	return fmt.Sprintf("%d warm-up requests first (left out of every figure)", n)
}

// countRecords counts run's lines in requests.jsonl: measured outcomes,
// warm-up, and attempts retried after a 429/503 (not outcomes).
func countRecords(run string, recs []result.Record) [3]int {
	var n [3]int
	for i := range recs {
		if recs[i].Run == run {
			n[recordKind(&recs[i])]++
		}
	}
	return n
}

// recordKind is countRecords' column for r: 0 measured, 1 warm-up, 2 retried.
func recordKind(r *result.Record) int {
	switch {
	case r.Warmup:
		return 1
	case r.Retried:
		return 2
	}
	return 0
}

func writeRun(b *strings.Builder, r *result.Run, nrec [3]int) {
	fmt.Fprintf(b, "### %s\n\n", mdEscape(RunLabel(r.Name)))
	wl := r.Workload
	mode := result.StreamRun(r.Stream)
	load := string(wl.Mode)
	switch {
	case wl.Concurrency > 0:
		load = fmt.Sprintf("%s, concurrency %d", wl.Mode, wl.Concurrency)
	case wl.Rate > 0:
		load = fmt.Sprintf("%s, %g requests/s (%s arrivals)", wl.Mode, wl.Rate, orDash(wl.Arrival))
	}
	exact := ""
	if wl.ExactLength {
		exact = ", exact length"
	}
	enc := ""
	if wl.AcceptEncoding != "" {
		enc = ", Accept-Encoding " + wl.AcceptEncoding
	}
	fmt.Fprintf(b, "- Workload: %s, %s, %s endpoint, %s%s, %s prompt, %s%s\n",
		load, mode, orDash(wl.Endpoint), lengthsText(wl), exact, orDash(wl.PromptKind), warmupText(wl.Warmup), enc)
	if t := TrafficText(wl); t != "" {
		if reuse := reuseText(r); reuse != "" {
			t += ", " + reuse
		}
		b.WriteString("- Traffic: " + t + "\n")
	}
	fmt.Fprintf(b, "- Requests: %d measured, %d ok%s; %.2f s; %.3g requests/s, %.4g output tokens/s\n",
		r.Requests, r.OK, errorsText(r.Errors), r.DurationS, r.Throughput.RequestsPerS, r.Throughput.OutputTokensPerS)
	if s := stutterText(r); s != "" {
		b.WriteString("- Arrivals: " + s + "\n")
	}
	writeAdapters(b, r)
	if pt := r.PromptTokens; pt != nil {
		fmt.Fprintf(b, "- Prompt tokens (generated prompts): requested %.1f on average, the server counted %.1f; %d of %d exactly as requested\n",
			pt.RequestedMean, pt.CountedMean, pt.Exact, pt.N)
	}
	switch {
	case nrec == [3]int{} && r.Requests > 0: // a bounded-memory run whose lines could not be read back
		b.WriteString("- Records in requests.jsonl: none of this run's read back for the charts (the warnings say why); the figures above count every request\n")
	default:
		fmt.Fprintf(b, "- Records in requests.jsonl: %d measured, %d warm-up", nrec[0], nrec[1])
		if nrec[2] > 0 {
			fmt.Fprintf(b, ", %d retried attempts (left out of the charts, as warm-up is)", nrec[2])
		}
		b.WriteString("\n")
	}
	if rc := r.Engine.Reconciliation; rc != nil {
		fmt.Fprintf(b, "- Reconciliation: client sent %d measured requests (retries included), %d ok, %d answered; engine counted %g",
			rc.Sent, rc.OK, rc.Completed, rc.EngineCount)
		if rc.WaitedS > 0 {
			fmt.Fprintf(b, " after waiting %.2f s for its counters", rc.WaitedS)
		}
		if rc.Foreign {
			b.WriteString("; **foreign traffic**: the engine counted requests servebench did not send")
		}
		if rc.Note != "" {
			b.WriteString("; " + rc.Note)
		}
		b.WriteString("\n")
	} else {
		b.WriteString("- Reconciliation: not available (no engine request counter)\n")
	}
	if line := prefixCacheText(r.Engine); line != "" {
		b.WriteString("- Prefix cache: " + line + "\n")
	}
	if rs := r.Rate; rs != nil {
		fmt.Fprintf(b, "- Schedule: %s; %d sends late by over 1 ms", rs.AchievedText(wl.Arrival, wl.Burstiness), rs.LateSends)
		if rs.SendLagS != nil {
			verdict := "under"
			if rs.LateMatters() {
				verdict = "over"
			}
			fmt.Fprintf(b, ", p99 lag %.2g ms, %s the %.2g ms from which lateness matters (a tenth of the mean gap between sends, at least 1 ms)",
				1000*rs.SendLagS.P99, verdict, 1000*rs.LateLimitS())
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	writeRunStats(b, r)
	writeReplicas(b, r)
}

// lengthsText says what output length each request asked: the run's
// max_tokens, a drawn distribution, or the dataset's or trace's own.
func lengthsText(wl result.Workload) string {
	switch {
	case wl.OutputTokens != "":
		return fmt.Sprintf("output lengths drawn from %s", wl.OutputTokens)
	case wl.OutputTokensFrom != "" && len(wl.OutputTokensRange) == 2:
		return fmt.Sprintf("output lengths from the %s (%d to %d tokens asked; max_tokens %d where it gives none)",
			wl.OutputTokensFrom, wl.OutputTokensRange[0], wl.OutputTokensRange[1], wl.MaxTokens)
	}
	return fmt.Sprintf("max_tokens %d", wl.MaxTokens)
}

// reuseText says when a dataset was started over to fill the run: its
// conversations against the requests (warm-up included) that drew them;
// "" when each was used at most once.
func reuseText(r *result.Run) string {
	wl := r.Workload
	n := wl.SourceEntries
	if n == 0 {
		return ""
	}
	if wl.Turns != "" { // sessions: requests count turns, not conversations
		return fmt.Sprintf("%d conversations, started over from the first when the run needs more", n)
	}
	used := r.Requests + wl.Warmup
	switch {
	case used <= n:
		return ""
	case wl.Warmup > 0:
		return fmt.Sprintf("%d conversations reused for %d requests (%d warm-up included)", n, used, wl.Warmup)
	}
	return fmt.Sprintf("%d conversations reused for %d requests", n, used)
}

// prefixCacheText is the run's prefix cache hit rate in words, "" when the
// engine figures have none.
func prefixCacheText(e result.EngineStats) string {
	switch {
	case e.PrefixCacheHitRate != nil && e.PrefixCacheQueries != nil && e.PrefixCacheHits != nil:
		return fmt.Sprintf("%.1f%% hit rate: %.0f of %.0f prompt tokens looked up were cached (engine counters over the run)",
			100**e.PrefixCacheHitRate, *e.PrefixCacheHits, *e.PrefixCacheQueries)
	case e.PrefixCacheHitRate != nil:
		return fmt.Sprintf("%.1f%% hit rate (the server's own recent figure at the run's end, not the run's)", 100**e.PrefixCacheHitRate)
	case e.PrefixCacheQueries != nil:
		return "no prompt tokens looked up (prefix caching off?)"
	}
	return ""
}

func errorsText(errs map[string]int) string {
	total := 0
	for _, n := range errs {
		total += n
	}
	if total == 0 {
		return ", no errors"
	}
	return fmt.Sprintf(", %d errors (%s)", total, result.ErrorCounts(errs))
}

// stutterText says how a run's streamed tokens arrived, and whether its
// ITL measures bursts; "" when nothing streamed.
func stutterText(r *result.Run) string {
	s := r.Client.Stutter
	if s == nil {
		return ""
	}
	t := fmt.Sprintf("%.2f tokens per arrival (max %d), %.0f%% of tokens in bursts of %d or more, largest gap between arrivals %s (p99 %s); %d streamed requests, %d of them bursty",
		s.TokensPerArrivalMean, s.TokensPerArrivalMax, 100*s.BurstShare, result.BurstTokens, msText(s.GapMaxS), msText(s.GapP99S), s.Requests, s.BurstyRequests)
	if r.Client.ITLOverBursts() {
		t += ". **The client ITL below is computed over bursts**: the tokens arrive in clumps (a buffering proxy or gateway), " +
			"so it measures the gaps inside a clump, not the engine's pace; the stream stutters"
	}
	return t
}

func msText(s float64) string { return fmt.Sprintf("%.1f ms", 1000*s) }

// writeRunStats prints the run's client and engine distributions.
func writeRunStats(b *strings.Builder, r *result.Run) {
	b.WriteString("| quantity | clock | n | mean | p50 | p90 | p99 |\n|---|---|---:|---:|---:|---:|---:|\n")
	overBursts := ""
	if r.Client.ITLOverBursts() {
		overBursts = ", over bursts"
	}
	client := []struct {
		name string
		s    *stats.Summary
	}{
		{"TTFB", r.Client.TTFBS}, {"first token", r.Client.FirstTokenS}, {"first visible output", r.Client.FirstVisibleS},
		{"E2E", r.Client.E2ES}, {"ITL per token" + overBursts, r.Client.ITLS}, {"gap between token events" + overBursts, r.Client.ITLEventS}, {"TPOT", r.Client.TPOTS},
		{"first visible from intended send", r.Client.FirstVisibleFromIntendedS},
		{"E2E from intended send", r.Client.E2EFromIntendedS},
		// A reasoning model's (absent otherwise); its first answer token is first visible output.
		{"first reasoning token", r.Client.FirstReasoningS}, {"thinking", r.Client.ThinkingS}, {"answer TPOT", r.Client.AnswerTPOTS},
	}
	for _, q := range client {
		if s := q.s; s != nil {
			fmt.Fprintf(b, "| %s (s) | client | %d | %.4f | %.4f | %.4f | %.4f |\n", q.name, s.N, s.Mean, s.Median, s.P90, s.P99)
		}
	}
	for _, q := range []struct {
		name string
		s    *stats.Summary
	}{{"output tokens", r.Client.OutputTokens}, {"reasoning tokens", r.Client.ReasoningTokens}, {"answer tokens", r.Client.AnswerTokens}} {
		if s := q.s; s != nil {
			fmt.Fprintf(b, "| %s | client | %d | %.1f | %.0f | %.0f | %.0f |\n", q.name, s.N, s.Mean, s.Median, s.P90, s.P99)
		}
	}
	engine := []struct {
		name string
		h    *result.Hist
	}{
		{"TTFT", r.Engine.TTFTS}, {"E2E", r.Engine.E2ES}, {"queue wait", r.Engine.QueueS},
		{"prefill", r.Engine.PrefillS}, {"decode", r.Engine.DecodeS}, {"ITL", r.Engine.ITLS},
	}
	exact, bounded := false, false
	for _, q := range engine {
		if h := q.h; h != nil {
			exact = exact || h.Exact
			bounded = bounded || len(h.Bounds) > 0
			fmt.Fprintf(b, "| %s (s) | engine | %g | %.4f | %s | %s | %s |\n", q.name, h.Count, h.Mean,
				EngineQuantile(h, "p50"), EngineQuantile(h, "p90"), EngineQuantile(h, "p99"))
		}
	}
	b.WriteString("\n_" + engineQuantileNote(exact, bounded) + "_\n\n")
}

// EngineQuantile formats an engine quantile ("p50", "p90", "p99") of h: a
// figure when exact (per-request timings), "~" a figure when interpolated
// inside a bucket, and the bucket ("<= 0.3", "2.5-5", "> 60") where the
// histogram cannot place it (result.Hist.Bounds).
func EngineQuantile(h *result.Hist, p string) string {
	v, bound := h.Quantile(p)
	switch {
	case h.Mean == 0: // every observation 0, whatever a bucket's middle says
		return fmt.Sprintf("%.4f", 0.0)
	case h.Exact:
		return fmt.Sprintf("%.4f", v)
	case bound == nil:
		return fmt.Sprintf("~%.4f", v)
	case bound.AtMost == nil:
		return "> " + bucketBound(bound.Above)
	case bound.Above <= 0:
		return "<= " + bucketBound(*bound.AtMost)
	}
	return bucketBound(bound.Above) + "-" + bucketBound(*bound.AtMost)
}

// bucketBound formats a bucket's bound: its own digits (0.3, 2.5), also
// after a clock's scaling (0.3 x 10 = 3, not 3.0000000000000004).
func bucketBound(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// engineQuantileNote says how the engine quantiles of a run's details
// were found: the requests' own (exact), or from histogram buckets, with
// what a bound means.
func engineQuantileNote(exact, bounded bool) string {
	if exact {
		return "Engine means and quantiles are exact: the requests' own timings, as the engine reported each one."
	}
	note := "Engine means are exact (delta sum / delta count); quantiles (~) interpolate inside the server's histogram buckets."
	if bounded {
		note += " Where the histogram cannot place a quantile (every observation in one bucket, or past the last bound) the bucket is given instead " +
			"(\"<= 0.3\": at most 0.3 s; \"2.5-5\": between 2.5 and 5 s): the mean says more."
	}
	return note
}

// sendPhaseGoodput is an open-loop run's attained requests per second of
// its send phase, whose length the achieved send rate gives: (sends - 1) /
// achieved; "-" for a closed loop.
func sendPhaseGoodput(r *result.Run) string {
	rs := r.Rate
	if rs == nil || rs.SendLagS == nil || rs.SendLagS.N < 2 || rs.AchievedPerS <= 0 {
		return "-"
	}
	span := float64(rs.SendLagS.N-1) / rs.AchievedPerS
	return fmt.Sprintf("%.2f req/s over %.3g s", float64(r.Goodput.Attained)/span, span)
}

// writePercentileKeys lists, for an SLO with percentile keys
// (ttft.p99=2s), each run's percentile against its bound: those keys are
// judged on the run, not counted in attainment.
func writePercentileKeys(b *strings.Builder, res *result.Results) {
	any := false
	for _, r := range res.Runs {
		if r.Goodput == nil || len(r.Goodput.Percentiles) == 0 {
			continue
		}
		var parts []string
		for _, p := range r.Goodput.Percentiles {
			verdict := "met"
			if !p.Met {
				verdict = "missed"
			}
			parts = append(parts, fmt.Sprintf("%s %.4g s against %.4g s, %s", p.Key, p.ValueS, p.LimitS, verdict))
		}
		fmt.Fprintf(b, "- %s, judged on the run (failed requests beyond any bound): %s\n", mdEscape(RunLabel(r.Name)), strings.Join(parts, "; "))
		any = true
	}
	if any {
		b.WriteString("\n")
	}
}

// writeGoodput writes the Goodput section, when a run had an SLO: each
// run's attainment, which thresholds held for how many requests, and the
// --find-max-rate answer.
func writeGoodput(b *strings.Builder, res *result.Results) {
	slo := runsSLO(res)
	if slo == "" {
		return
	}
	fmt.Fprintf(b, "## Goodput\n\nSLO `%s`, judged per request on the client clock: ttft is the first generated token, "+
		"tpot (e2e - first visible) / (output tokens - 1), itl the request's largest per-token gap, e2e the end of the "+
		"response; ttft and e2e count from the intended send time in open-loop runs. A request attains the SLO when "+
		"it succeeded and meets every threshold. Goodput is those requests per second of the run's duration, from "+
		"its start to the last response (the drain after the last send included), as vLLM's request_goodput divides "+
		"by its benchmark duration; an open-loop run also gets them per second of its send phase (first to last "+
		"send), the time base of its target rate.\n\n", slo)
	b.WriteString("| Run | Attained | Attainment | Goodput (run duration) | Goodput (send phase) | Met per threshold |\n" +
		"|---|---:|---:|---:|---:|---|\n")
	for _, r := range res.Runs {
		g := r.Goodput
		if g == nil {
			continue
		}
		var met []string
		for _, k := range result.SLOKeys {
			if n, ok := g.Met[k]; ok {
				met = append(met, fmt.Sprintf("%s %d", k, n))
			}
		}
		fmt.Fprintf(b, "| %s | %d of %d | %.1f%% | %.2f req/s over %.3g s | %s | %s |\n", mdEscape(RunLabel(r.Name)), g.Attained,
			g.Requests, g.Attainment, g.RatePerS, r.DurationS, sendPhaseGoodput(&r), strings.Join(met, ", "))
	}
	b.WriteString("\n")
	writePercentileKeys(b, res)
	if mr := res.MaxRate; mr != nil {
		fmt.Fprintf(b, "**%s.**\n\n", mdEscape(strings.ToUpper(mr.String()[:1])+mr.String()[1:]))
	}
}
