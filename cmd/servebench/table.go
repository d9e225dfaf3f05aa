package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench"
	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/bench/workload"
)

// tableOptions are `servebench table`'s flags beyond the shared ones.
type tableOptions struct {
	sessionOptions
	requests int
	prompt   string
}

func newTableCmd() *cobra.Command {
	var o tableOptions
	cmd := &cobra.Command{
		Use:   "table",
		Short: "The seed lesson's table: 20 sequential streaming then non-streaming requests of 256 tokens",
		Long: `table reproduces the seed lesson's measurement. With no flags it starts the bundled
engine on its default profile (Qwen2.5-7B-Instruct-AWQ on an RTX 3060, as a child process),
waits until /health answers, sends 20 sequential streaming requests and then 20
non-streaming ones of exactly 256 output tokens, and prints:

  rows     Streaming, Non-streaming
  columns  first visible output (client, median), E2E (client, median),
           engine TTFT (mean), E2E (engine, mean), queue wait (engine, mean)

Client figures come from servebench's clock, engine figures from /metrics deltas over
each run: compare the two at the order-of-magnitude level only. The default profile
takes about 90 s to start and 40 x 3.85 s to run; --speedup 10 divides both by ten.`,
		Example: `  servebench table
  servebench table --speedup 10 --format markdown
  servebench table --base-url http://127.0.0.1:8000 --out results/
  servebench table --server-cmd "vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --port 8000"
  servebench table --speedup 20 --baseline results/ --max-regression client.e2e.median=5%`,
		Annotations: map[string]string{validatesItself: "session"},
		Args:        cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runs, err := o.runs()
			if err != nil {
				return usageErr(err)
			}
			return o.session(cmd, sessionPlan{runs: runs})
		},
	}
	o.addFlags(cmd.Flags(), 256)
	o.addRepeatsFlag(cmd.Flags())
	cmd.Flags().IntVar(&o.requests, "requests", 20, "requests per mode: this many streaming, then as many non-streaming (table always runs both)")
	cmd.Flags().StringVar(&o.prompt, "prompt", workload.DefaultPrompt, "the prompt of every request")
	return cmd
}

// runs is the seed's pair: sequential streaming, then non-streaming.
func (o *tableOptions) runs() ([]bench.RunSpec, error) {
	if o.requests < 1 {
		return nil, fmt.Errorf("--requests %d: expected at least 1", o.requests)
	}
	p, err := workload.FixedPrompt(o.prompt)
	if err != nil {
		return nil, err
	}
	var runs []bench.RunSpec
	for _, stream := range []bool{true, false} {
		spec := bench.RunSpec{
			Name:     string(result.StreamRun(stream)),
			Workload: workload.Workload{Mode: workload.ModeSequential, Requests: o.requests},
			Request:  o.request(stream),
			Prompts:  p,
		}
		if err := spec.Validate(); err != nil {
			return nil, err
		}
		runs = append(runs, spec)
	}
	return runs, nil
}
