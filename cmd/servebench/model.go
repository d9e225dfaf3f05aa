package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/engine/tinymodel"
)

// modelOptions are the flags of `servebench model tiny`.
type modelOptions struct {
	out, size string
	seed      uint64
}

func newModelCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Make models to benchmark real servers with (no download)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newModelTinyCmd())
	return cmd
}

func newModelTinyCmd() *cobra.Command {
	var o modelOptions
	cmd := &cobra.Command{
		Use:   "tiny --out DIR",
		Short: "Write a random-weight Llama (GGUF) and its Ollama Modelfile: word soup at a real engine's speed, never ending early",
		Long: `Writes DIR/tiny.gguf (--size small, under 2 MB, for tests) or DIR/tiny-medium.gguf
(--size medium, about 100 MB, for figures) and DIR/Modelfile, for Ollama
(servebench table --server ollama --gguf DIR/tiny.gguf) or llama.cpp.

The weights are random, so the output is word soup; tokenizing, prefill, the
KV cache, decode and sampling are real, so the speed is real. The model never
emits end-of-sequence: every answer has exactly the requested length. The same
flags write the same bytes.`,
		Example: `  servebench model tiny --out models
  servebench model tiny --out models --size medium --seed 2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return usageErr(fmt.Errorf("--out: expected the directory to write the model to"))
			}
			size, err := tinymodel.SizeNamed(o.size)
			if err != nil {
				return usageErr(fmt.Errorf("--size: %w", err))
			}
			m, err := tinymodel.New(size, o.seed)
			if err != nil {
				return err
			}
			path, err := m.Write(o.out)
			if err != nil {
				return usageErr(fmt.Errorf("--out %s: %w", o.out, err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%d bytes), Modelfile beside it\n%s\n", path, len(m.GGUF), m.Describe())
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.out, "out", "", "directory to write <name>.gguf and Modelfile to (created)")
	f.StringVar(&o.size, "size", "small", "model size: "+strings.Join(tinymodel.SizeNames(), ", "))
	f.Uint64Var(&o.seed, "seed", 1, "seed of the random weights (same flags, same bytes)")
	return cmd
}
