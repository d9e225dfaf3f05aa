// Package tune answers "which server configuration should we deploy, and
// how sure are we" (servebench tune). It sits above bench's session:
//
//	Grid -> Treatments x Repeats -> shuffled Units -> bench.Execute each
//	     -> results.json per unit -> Summarize -> result.Tune (tune.json)
//
// A treatment is one server configuration: values of the grid's factors,
// each a bundled engine flag (--engine-grid), a --server-cmd placeholder
// (--grid) or an environment variable (--env-grid). Every unit (treatment,
// repeat) gets a fresh server, so its start-up phases and KV capacity are
// data too, then the same warm-up and load (a ladder of levels, or a
// --find-max-rate search re-checked at its answer with fresh seeds). The
// units run in blocks, one repeat of every treatment each, shuffled within
// the block, so drift in the host spreads over the treatments instead of
// landing on one. tune.json is rewritten after every unit: a killed tune
// resumes (Options.Resume) without redoing finished units.
//
// Figures are summarised per run, and a treatment's figure is the mean of
// its runs with a 95% interval across them (the run, not the request, is
// the unit of evidence); "A beats B" is said only when the interval of the
// difference leaves out zero. Nothing here touches the process.
package tune
