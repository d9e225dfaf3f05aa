package result

// TuneFile is where `servebench tune` keeps its grid, its units' state and
// its answer, in the tune's directory; each unit's session is a results
// directory of its own below it (TuneUnit.Dir).
const TuneFile = "tune.json"

// TuneSchema versions tune.json.
const TuneSchema = "servebench/tune/v1"

// Tune is a tune session (tune.json): a grid of server settings, each
// treatment run Repeats times (a fresh server each time) in a shuffled,
// interleaved order, and what the repeats say with their 95% intervals.
// It is rewritten (by atomic rename) after every unit, so a kill leaves a
// file `tune --resume` continues from.
type Tune struct {
	Schema   string       `json:"schema"`
	Manifest Manifest     `json:"manifest"`
	Grid     []TuneFactor `json:"grid"`
	Repeats  int          `json:"repeats"`
	Seed     int64        `json:"seed"` // the order's shuffle and the repeats' workload seeds
	// Clock is the clock every figure below is in: "modelled" (the bundled
	// engine's emulated hardware, its --speedup undone) or "wall"; each
	// unit's results.json keeps the wall-clock figures.
	Clock   string  `json:"clock"`
	Speedup float64 `json:"speedup,omitempty"`
	SLO     string  `json:"slo,omitempty"`
	// Target is --find-max-rate's attainment percent (0: a load ladder).
	Target          float64          `json:"target,omitempty"`
	GPUHourPriceUSD float64          `json:"gpu_hour_price_usd,omitempty"`
	Units           []TuneUnit       `json:"units"` // in the order they run
	Treatments      []TuneTreatment  `json:"treatments"`
	Answer          *TuneAnswer      `json:"answer,omitempty"`
	Comparisons     []TuneComparison `json:"comparisons,omitempty"`
	Warnings        []string         `json:"warnings"`
	// Incomplete marks a tune some of whose units have not run yet.
	Incomplete bool `json:"incomplete,omitempty"`
}

// TuneFactor is one setting the grid varies and its values.
type TuneFactor struct {
	Name   string   `json:"name"`
	Kind   string   `json:"kind"` // engine (a bundled engine flag), template (a --server-cmd placeholder), env
	Values []string `json:"values"`
}

// TuneSetting is one factor's value in a treatment.
type TuneSetting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TuneUnit is one repeat of one treatment: one server start, its warm-up
// and load, one results directory.
type TuneUnit struct {
	Treatment int     `json:"treatment"` // index in Treatments
	Repeat    int     `json:"repeat"`    // 1..Repeats
	Dir       string  `json:"dir"`       // relative to the tune's directory
	Done      bool    `json:"done"`
	Error     string  `json:"error,omitempty"` // why the unit measured nothing usable
	WallS     float64 `json:"wall_s,omitempty"`
}

// TuneTreatment is one server configuration and what its repeats measured.
type TuneTreatment struct {
	Name     string        `json:"name"` // e.g. "max-num-seqs=64"
	Settings []TuneSetting `json:"settings"`
	GPUs     int           `json:"gpus"`
	Repeats  int           `json:"repeats"` // finished units
	// Startup: start-up phases (seconds, as the unit's clock ran them) and
	// the KV cache the server reported, across repeats.
	Startup []TuneFigure `json:"startup,omitempty"`
	Levels  []TuneLevel  `json:"levels,omitempty"`
	// MaxRate is the highest request rate meeting the SLO (--find-max-rate),
	// each repeat's answer re-checked at that rate with fresh seeds.
	MaxRate *Interval `json:"max_rate_per_s,omitempty"`
	Notes   []string  `json:"notes,omitempty"`
}

// TuneLevel is one load level of a treatment across its repeats ("c=16",
// "rate=4", or "max-rate": the re-check run at each repeat's found rate).
type TuneLevel struct {
	Name    string       `json:"name"`
	Figures []TuneFigure `json:"figures"`
	// SLOHeld counts the repeats whose run met the SLO (percentile keys on
	// the run's figure, the others at Target attainment or 100%).
	SLOHeld *int `json:"slo_held,omitempty"`
}

// TuneFigure is one quantity across repeats.
type TuneFigure struct {
	Key string `json:"key"`
	Interval
}

// Interval is a mean across runs with its 95% confidence interval
// (Student's t over the runs' values: the run is the unit of evidence).
// With one run Lo and Hi equal the value and Width says nothing.
type Interval struct {
	Mean   float64   `json:"mean"`
	Lo     float64   `json:"lo"`
	Hi     float64   `json:"hi"`
	N      int       `json:"n"`
	Values []float64 `json:"values"`
}

// TuneAnswer is the recommendation: the treatment (at its best level) with
// the highest figure under the SLO, its runner-up, and whether the
// difference is significant across repeats.
type TuneAnswer struct {
	Figure   string          `json:"figure"` // the key compared
	Best     string          `json:"best"`   // "max-num-seqs=128 (rate=...)"
	RunnerUp string          `json:"runner_up,omitempty"`
	Compare  *TuneComparison `json:"compare,omitempty"`
	Text     string          `json:"text"`
}

// TuneComparison is A against B on one figure: the difference of the
// means with its 95% interval (Welch), significant when the interval
// leaves out 0.
type TuneComparison struct {
	A           string  `json:"a"`
	B           string  `json:"b"`
	Figure      string  `json:"figure"`
	Diff        float64 `json:"diff"` // mean A - mean B
	Lo          float64 `json:"lo"`
	Hi          float64 `json:"hi"`
	Significant bool    `json:"significant"`
	Test        string  `json:"test"` // e.g. "Welch's t across runs, n=3+3"
	Text        string  `json:"text"`
}

// Figure keys of a level (result.TuneFigure.Key), in the clock of the tune.
const (
	FigOutputTokS       = "output_tokens_per_s"
	FigOutputTokSPerGPU = "output_tokens_per_s_per_gpu"
	FigTokSPerUser      = "tokens_per_s_per_user" // 1 / median TPOT: the decode speed one user sees
	FigRequestsS        = "requests_per_s"
	FigTTFTP99          = "ttft_p99_s"
	FigTPOTMedian       = "tpot_median_s"
	FigTPOTP99          = "tpot_p99_s"
	FigE2EMedian        = "e2e_median_s"
	FigE2EP99           = "e2e_p99_s"
	FigAttainment       = "attainment_pct"
	FigUSDPerMTok       = "usd_per_million_output_tokens"
	FigMaxRate          = "max_rate_per_s"
)

// Figure is lv's figure of key, or nil.
func (lv *TuneLevel) Figure(key string) *Interval {
	for i := range lv.Figures {
		if lv.Figures[i].Key == key {
			return &lv.Figures[i].Interval
		}
	}
	return nil
}
