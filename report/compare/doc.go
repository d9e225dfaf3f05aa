// Package compare is servebench's CI regression gate: it compares two saved
// result sets (a baseline and a new run, each results.json plus
// requests.jsonl) run by run, and says which quantities got significantly
// and materially worse.
//
// It sits at the end of the pipeline, after bench has written its results:
//
//	Load(base), Load(new) -> Compare(base, new, Options) -> Report -> Write(w, format)
//
// A side may also be `vllm bench serve --save-result --save-detailed`
// output (Load reads it through report/export): one run per result object,
// per-request samples from its arrays, the workload checked where both
// sides record it (RunReport.Unchecked names the rest).
//
// `servebench table|run|sweep --baseline DIR` loads the baseline before the
// run and compares it with the run's results, not yet saved, as a Side.
//
// The run is the unit of evidence (Options.Test TestAuto): requests of
// one run share its batch schedule, so whole runs shift together and a
// test that takes them as independent samples cries wolf between runs of
// one build. A side of several runs (Side.Repeats: --repeats N, or Group
// of several result sets) is tested across runs: each run's statistic is
// one observation, Welch's t-test with the change's 95% interval
// (stats.CompareRuns; ModeRuns). One new run against several base runs is
// judged by their prediction interval (stats.AgainstHistory;
// ModeHistory). With one run a side the noise is unknown: the limits alone
// judge (ModeLimits), and the per-request test is shown beside it,
// Row.RequestP, not gating.
//
// The per-request test (TestRequests, ModeRequests; servebench's only
// test before run-level statistics): a two-sided Mann-Whitney U test (normal
// approximation with tie and continuity correction, as SciPy's asymptotic
// method and benchstat) on the per-request samples of requests.jsonl,
// successful measured requests only (warm-up excluded). It is
// distribution-free: latency's long tails and multi-modal shapes
// (queueing, preemption) only move ranks. The test asks whether one
// side's values tend to be larger, which is what a latency regression is;
// the threshold then asks whether the chosen statistic moved enough to
// matter. A regression is both.
//
// Engine figures (engine.*) come from /metrics histogram deltas: a mean and
// bucket estimates per run. Across runs they are tested like any run-level
// value. Under the per-request test they have no samples, so they get no
// significance test of their own, and a mean moves with one stalled
// request. An engine figure regresses when it passes its threshold, the
// engine counted enough requests on both sides, and the client quantity
// whose interval contains it (first token for TTFT and queue wait, E2E for
// E2E) is significantly worse too: a real engine slowdown must show in
// what the client sees.
//
// Nothing here touches the process: no flags, no os.Exit, output goes to
// the io.Writer given. Errors wrap ErrInput (unusable input: missing files,
// bad JSON, schema or workload mismatch) or ErrInvalidRun (a side that
// cannot be judged: no runs, every request failed, too few samples) so the
// command can map them to exit codes 2 and 3.
package compare
