// Package export writes a saved result set in formats other tools read:
// the result JSON of `vllm bench serve --save-result --save-detailed`
// (vllm-bench) and one CSV row per request (csv). It also reads vLLM's
// result JSON back (ReadVLLM), so report/compare can take a vLLM baseline.
//
// It sits after bench in the pipeline, beside report:
//
//	result.Load(dir) -> Write(w, format, res, recs, Options)
//
// Write touches nothing but the io.Writer given; Save is `servebench
// export`'s destinations on top of it (stdout, --out FILE or DIR, --append).
package export
