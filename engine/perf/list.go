package perf

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteProfiles writes the GPU and model profiles and a fits matrix (KV
// cache tokens at DefaultConfig, or why it does not fit) as aligned text,
// for `servebench engine --list-profiles`.
func WriteProfiles(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tMEMORY GiB\tBANDWIDTH GB/s\tBF16 TFLOP/s\tLOAD GB/s")
	for _, g := range gpus {
		fmt.Fprintf(tw, "%s\t%.2f\t%.0f\t%.1f\t%.2f\n", g.Name, g.MemoryGiB, g.BandwidthGBs, g.TFLOPs, g.LoadGBs)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "MODEL\tSERVED NAME\tPARAMS B\tWEIGHTS GiB\tLAYERS\tKV HEADS\tHEAD DIM\tKV KiB/TOKEN\tMAX CONTEXT")
	for _, m := range models {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%d\t%d\t%d\t%d\t%d\n", m.Name, m.ServedName, m.ParamsB,
			m.WeightBytes()/gib, m.Layers, m.KVHeads, m.HeadDim, m.KVBytesPerToken()/1024, m.MaxContext)
	}
	fmt.Fprintln(tw)
	cfg := DefaultConfig()
	fmt.Fprintf(tw, "KV CACHE TOKENS (--max-model-len %d --gpu-memory-utilization %.2f); decode ms/token alone\n",
		cfg.MaxModelLen, cfg.GPUMemoryUtilization)
	fmt.Fprint(tw, "GPU")
	for _, m := range models {
		fmt.Fprintf(tw, "\t%s", m.Name)
	}
	fmt.Fprintln(tw)
	for _, g := range gpus {
		fmt.Fprint(tw, g.Name)
		for _, m := range models {
			fmt.Fprintf(tw, "\t%s", fitCell(g, m, cfg))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// fitCell is one fits-matrix cell: "77,744 (15.0 ms)" or why not.
func fitCell(g GPU, m Model, cfg Config) string {
	p, err := New(g, m, cfg)
	if err != nil {
		if !errors.Is(err, ErrDoesNotFit) {
			return "invalid"
		}
		q := &Perf{gpu: g, model: m, cfg: withDefaults(cfg, m, g)}
		return fmt.Sprintf("no (needs %.1f of %.1f GiB)", q.need()/gib, q.budget()/gib)
	}
	ms := p.StepTime(Step{DecodeSeqs: 1, ContextTokens: 256}).Seconds() * 1000
	return fmt.Sprintf("%s (%.1f ms)", commas(p.KVCacheTokens()), ms)
}

// commas formats n with thousands separators, as vLLM logs token counts.
func commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
