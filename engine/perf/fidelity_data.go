package perf

import (
	"embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// CitedFigure is one public vLLM measurement the model is held against,
// a row of the figure files (data/figures): what was measured (Quantity
// under the conditions Config, Real in Unit), where it was published
// (Source), on which vLLM release, model and dtype (VLLM, Measured), and
// how the model computes the same quantity (Method under the serving
// configuration Cfg). Set says how it is judged: fit figures were fitted
// to (FidelityTolerance), held-out and const-fit ones were not
// (FidelityHeldOutTolerance; a const-fit figure was fitted to the constant
// named by Fits); an exempt figure cannot be reached by a physical model
// of the engine as it is and is printed but not judged; a gap figure is
// one the model is known to miss, judged to stay missed so that a fixed
// model cannot keep a stale label. Why says why for those two.
type CitedFigure struct {
	GPU      string  // GPU profile
	Model    string  // model profile, or a cited-only architecture
	Quantity string  // a key of quantityUnits
	Config   string  // the measured conditions, one token (no spaces)
	Real     float64 // the published value, in Unit
	Unit     string
	Set      string // setFit, setHeldOut, setConstFit, setGap or setExempt
	Fits     string // the constant (fittedConstants) fitted to it, for set const-fit
	Method   string // how the model computes it (methods), "decode-step batch=8 context=1024"
	Cfg      Config // the run's serving configuration
	VLLM     string // vLLM release of the measurement
	Measured string // model, dtype and GPU as published
	Source   string // repository file, paper table or page
	Why      string // exempt: why no physical model meets it; gap: what the model lacks
	Pos      string // file:line of its row

	eval func(*Perf) float64 // Method, parsed
}

// HeldOut reports whether the efficiency fit left the figure out.
func (f CitedFigure) HeldOut() bool { return f.Set != setFit }

// Quantities of the figures the efficiency fit and the memory lines use.
const (
	quantityTTFT     = "ttft"
	quantityDecode   = "decode"
	quantityKVTokens = "kv-tokens"
	quantityKVGiB    = "kv-gib"
)

// fidelityGaps names the GPU profiles without a cited figure, with why
// (docs/engine-sources.md lists what was searched); none today.
var fidelityGaps = map[string]string{}

// figureData holds the cited figures, one CSV file per source (its
// provenance: docs/engine-sources.md).
//
//go:embed data/figures/*.csv
var figureData embed.FS

const figureDir = "data/figures"

// figureColumns is every figure file's header.
var figureColumns = []string{"gpu", "model", "quantity", "conditions", "value", "unit", "set", "fits",
	"method", "serving", "vllm", "measured", "source", "why"}

// quantityUnits are the quantities a figure may state, each in its unit.
var quantityUnits = map[string]string{
	quantityTTFT: "ms", quantityDecode: "ms", quantityKVTokens: "tokens", quantityKVGiB: "GiB",
	"graph-gib": "GiB", "activation-gib": "GiB",
}

// fittedConstants are the constants besides the per-architecture
// efficiencies that were fitted to figures (the fits column): such a
// figure is judged apart, as set=const-fit.
var fittedConstants = []string{"DecodeGEMMShare", "SplitKVMMAShare", "MXFP4MoEGEMMRate", "MXFP4MoELayerLatency",
	"V0SeqOverhead", "nvlinkLatency", "RankSkew", "FP8GEMMSpeedup", "NonTorchIncrease019GiB",
	"NonTorchIncreaseTP019GiB", "coldCompilePeak028GiB"}

// loadFigures reads the embedded figures once, on first use: most runs
// of the binary never need them.
var loadFigures = sync.OnceValues(func() ([]CitedFigure, error) { return readFigures(figureData, figureDir) })

// FidelityFigures is the fidelity table: every cited figure, read from
// the embedded data files.
func FidelityFigures() ([]CitedFigure, error) {
	figs, err := loadFigures()
	return slices.Clone(figs), err
}

// readFigures reads every .csv file of dir in fsys, in name order.
func readFigures(fsys fs.FS, dir string) ([]CitedFigure, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("perf: cited figures: %w", err)
	}
	var figs []CitedFigure
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".csv" {
			continue
		}
		name := path.Join(dir, e.Name())
		f, err := fsys.Open(name)
		if err != nil {
			return nil, fmt.Errorf("perf: cited figures: %w", err)
		}
		rows, err := readFigureFile(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
		figs = append(figs, rows...)
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("perf: cited figures: no rows in %s", dir)
	}
	return figs, nil
}

// FigureError is a bad cited-figure row: file, line and column of the
// field, and what is wrong with it.
type FigureError struct {
	File         string
	Line, Column int
	Field        string // the column's name, "" for the row as a whole
	Err          error
}

func (e *FigureError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %v", e.File, e.Line, e.Column, e.Field, e.Err)
}

func (e *FigureError) Unwrap() error { return e.Err }

// readFigureFile reads one figure file; lines starting with # are
// comments.
func readFigureFile(r io.Reader, name string) ([]CitedFigure, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, csvError(name, err)
	}
	if !slices.Equal(header, figureColumns) {
		line, col := cr.FieldPos(0)
		return nil, &FigureError{File: name, Line: line, Column: col,
			Err: fmt.Errorf("header %q, want %q", strings.Join(header, ","), strings.Join(figureColumns, ","))}
	}
	var figs []CitedFigure
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return figs, nil
		}
		if err != nil {
			return nil, csvError(name, err)
		}
		if len(rec) != len(figureColumns) {
			line, col := cr.FieldPos(0)
			return nil, &FigureError{File: name, Line: line, Column: col,
				Err: fmt.Errorf("%d fields, want %d (%s)", len(rec), len(figureColumns), strings.Join(figureColumns, ","))}
		}
		f, col, err := parseFigure(rec)
		if err != nil {
			line, c := cr.FieldPos(col)
			return nil, &FigureError{File: name, Line: line, Column: c, Field: figureColumns[col], Err: err}
		}
		line, _ := cr.FieldPos(0)
		f.Pos = fmt.Sprintf("%s:%d", name, line)
		figs = append(figs, f)
	}
}

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &FigureError{File: name, Line: pe.Line, Column: pe.Column, Err: pe.Err}
	}
	return &FigureError{File: name, Line: 1, Column: 1, Err: err}
}

// parseFigure checks one row and builds its figure; on error it returns
// the index of the bad column.
func parseFigure(rec []string) (CitedFigure, int, error) {
	col := func(name string) int { return slices.Index(figureColumns, name) }
	get := func(name string) string { return rec[col(name)] }
	f := CitedFigure{
		GPU: get("gpu"), Model: get("model"), Quantity: get("quantity"), Config: get("conditions"),
		Unit: get("unit"), Set: get("set"), Fits: get("fits"), Method: get("method"),
		VLLM: get("vllm"), Measured: get("measured"), Source: get("source"), Why: get("why"),
	}
	var err error
	if _, err := LookupGPU(f.GPU); err != nil {
		return f, col("gpu"), err
	}
	if _, err := lookupFidelityModel(f.Model); err != nil {
		return f, col("model"), err
	}
	unit, ok := quantityUnits[f.Quantity]
	if !ok {
		return f, col("quantity"), fmt.Errorf("unknown quantity %q (known: %s)", f.Quantity, strings.Join(sortedKeys(quantityUnits), ", "))
	}
	if f.Config == "" || strings.ContainsAny(f.Config, " \t") {
		return f, col("conditions"), fmt.Errorf("%q: want one token, no spaces", f.Config)
	}
	if f.Real, err = strconv.ParseFloat(get("value"), 64); err != nil || !(f.Real > 0) {
		return f, col("value"), fmt.Errorf("%q: want a positive number", get("value"))
	}
	if f.Unit != unit {
		return f, col("unit"), fmt.Errorf("unit %q, want %q for a %s figure", f.Unit, unit, f.Quantity)
	}
	if !slices.Contains(figureSets, f.Set) {
		return f, col("set"), fmt.Errorf("unknown set %q (known: %s)", f.Set, strings.Join(figureSets, ", "))
	}
	if f.Fits != "" && !slices.Contains(fittedConstants, f.Fits) {
		return f, col("fits"), fmt.Errorf("unknown constant %q (known: %s)", f.Fits, strings.Join(fittedConstants, ", "))
	}
	if (f.Fits != "") != (f.Set == setConstFit) {
		return f, col("fits"), fmt.Errorf("a figure names the constant it fits exactly when its set is %s", setConstFit)
	}
	if f.eval, err = parseMethod(f.Method); err != nil {
		return f, col("method"), err
	}
	if f.Cfg, err = parseServing(get("serving")); err != nil {
		return f, col("serving"), err
	}
	for _, c := range []string{"vllm", "measured", "source"} {
		if get(c) == "" {
			return f, col(c), errors.New("empty")
		}
	}
	if (f.Why != "") != (f.Set == setExempt || f.Set == setGap) {
		return f, col("why"), fmt.Errorf("an %s or %s figure says why, no other", setExempt, setGap)
	}
	return f, 0, nil
}

// figureSets are the sets a figure is judged in (CitedFigure.Set).
var figureSets = []string{setFit, setHeldOut, setConstFit, setGap, setExempt}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// servingKeys are the serving column's keys, vLLM's flag names where
// vLLM has one, each setting its Config field.
var servingKeys = map[string]func(*Config, string) error{
	"max-model-len":          intField(func(c *Config) *int { return &c.MaxModelLen }),
	"block-size":             intField(func(c *Config) *int { return &c.BlockSize }),
	"max-num-seqs":           intField(func(c *Config) *int { return &c.MaxNumSeqs }),
	"max-num-batched-tokens": intField(func(c *Config) *int { return &c.MaxNumBatchedTokens }),
	"tensor-parallel-size":   intField(func(c *Config) *int { return &c.TensorParallelSize }),
	"pipeline-parallel-size": intField(func(c *Config) *int { return &c.PipelineParallelSize }),
	"non-torch-increase":     boolField(func(c *Config) *bool { return &c.NonTorchIncrease }),
	"cold-compile":           boolField(func(c *Config) *bool { return &c.ColdCompile }),
	"vllm-version":           func(c *Config, v string) error { c.VLLMVersion = v; return nil },
	"gpu-memory-utilization": func(c *Config, v string) error {
		u, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		c.GPUMemoryUtilization = u
		return nil
	},
	"memory-profile": func(c *Config, v string) error {
		i := slices.Index(memoryProfileNames, v)
		if i < 0 {
			return fmt.Errorf("want one of %s", strings.Join(memoryProfileNames, ", "))
		}
		c.Release = MemoryRelease(i)
		return nil
	},
}

// memoryProfileNames name the MemoryRelease values, in their order.
var memoryProfileNames = []string{"seed", "sort-sampler", "triton-sampler", "model-runner-v2"}

func intField(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("%q: want a positive integer", v)
		}
		*field(c) = n
		return nil
	}
}

func boolField(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q: want true or false", v)
		}
		*field(c) = b
		return nil
	}
}

// parseServing reads the serving column, "k=v k=v" of servingKeys;
// gpu-memory-utilization is required (New needs it).
func parseServing(s string) (Config, error) {
	var c Config
	_, kvs, err := splitFields("serving " + s)
	if err != nil {
		return c, err
	}
	for _, k := range sortedKeys(kvs) {
		set, ok := servingKeys[k]
		if !ok {
			return c, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(sortedKeys(servingKeys), ", "))
		}
		if err := set(&c, kvs[k]); err != nil {
			return c, fmt.Errorf("%s: %w", k, err)
		}
	}
	if c.GPUMemoryUtilization <= 0 || c.GPUMemoryUtilization > 1 {
		return c, errors.New("gpu-memory-utilization in (0, 1] is required")
	}
	return c, nil
}
