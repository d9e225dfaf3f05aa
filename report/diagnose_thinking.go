package report

import (
	"fmt"

	"github.com/servebench/servebench/bench/result"
)

// CauseThinking: a reasoning model thought before it answered. Its first
// token came soon (the engine's TTFT counts it) but was reasoning, which a
// user does not see as the answer; the first visible output waited for
// the thinking to end.
const CauseThinking Cause = "thinking"

// thinking adds the thinking finding to a streaming run whose requests
// reasoned, and returns the client's mean first token of any kind: the
// moment to judge the way between engine and client by, since the first
// answer token comes after the thinking by design. ok is false, and d
// unchanged, when the run did not reason.
func thinking(d *Diagnosis, run result.Run, fv float64, th Thresholds) (first float64, ok bool) {
	c := run.Client
	if c.ReasoningTokens == nil || c.FirstTokenS == nil || !run.Stream {
		return 0, false
	}
	first = c.FirstTokenS.Mean
	if fv-first < th.LostGap {
		return first, true // thought, but too briefly to count
	}
	text := fmt.Sprintf("The model thought before it answered: its first token came after a mean %s (client), "+
		"but it was reasoning; a median %.0f reasoning tokens", secsText(first), c.ReasoningTokens.Median)
	if c.ThinkingS != nil {
		text += fmt.Sprintf(" over a mean %s of thinking", secsText(c.ThinkingS.Mean))
	}
	text += fmt.Sprintf(" came before the first answer token (first visible output, mean %s). That %s is the model's "+
		"decode time for its thinking, not queueing and not the way to the client: a reasoning budget, "+
		"thinking off for requests that do not need it, or faster decoding would shorten it; streaming "+
		"the reasoning lets a user watch it.", secsText(fv), secsText(fv-first))
	d.Findings = append(d.Findings, Finding{CauseThinking, text})
	return first, true
}

// thinkingHeldBack adds, to a non-streaming run whose requests reasoned,
// that streaming would show the thinking early but not the answer.
func thinkingHeldBack(d *Diagnosis, run result.Run) {
	c := run.Client
	if c.ReasoningTokens == nil || run.Stream {
		return
	}
	text := fmt.Sprintf("The model also thought first: a median %.0f of its output tokens were reasoning, "+
		"returned beside the answer; streamed, the first token would be reasoning and the answer would still "+
		"wait for the thinking to end.", c.ReasoningTokens.Median)
	d.Findings = append(d.Findings, Finding{CauseThinking, text})
}
