package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Main runs the servebench CLI with args and returns the process exit code.
// It never calls os.Exit, so whole-command tests can run in-process.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "servebench: %s\n", flagText(cmd, err))
	}
	return exitCode(err)
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "servebench",
		Short: "Benchmark LLM inference servers: client latency and engine /metrics side by side",
		Long: `servebench starts (or connects to) an LLM inference server, waits until it is
really ready, fires sequential, concurrent or rate-driven requests in streaming and
non-streaming mode, scrapes /metrics before and after each run, and reports the
client's first visible output and E2E beside the engine's TTFT and queue wait.`,
		Example: `  servebench table                       # the 20x256 table on the bundled engine
  servebench table --speedup 10          # the same, ten times faster
  servebench run --base-url http://127.0.0.1:8000 --concurrency 16 --requests 200
  servebench engine --list-profiles`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	root.AddCommand(
		newEngineCmd(),
		newTableCmd(),
		newRunCmd(),
		newCalibrateCmd(),
		newScrapeCmd(),
		newStartupCmd(),
		newReportCmd(),
		newCompareCmd(),
		newHistoryCmd(),
		newExportCmd(),
		newSweepCmd(),
		newTuneCmd(),
		newProbeCmd(),
		newK8sCmd(),
		newMergeCmd(),
		newModelCmd(),
	)
	markArgErrorsAsUsage(root)
	addValidate(root)
	return root
}

// markArgErrorsAsUsage makes a stray or missing argument, and an unknown
// command, a usage error (exit 2) rather than a failed run: cobra returns
// those errors untagged.
func markArgErrorsAsUsage(root *cobra.Command) {
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageErr(fmt.Errorf("unknown command %q for %q (see servebench --help)", args[0], cmd.CommandPath()))
		}
		return nil
	}
	// A runnable root, so cobra runs the check above instead of printing
	// help for an unknown command and exiting 0.
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	for _, c := range root.Commands() {
		check := c.Args
		if check == nil {
			continue // the command checks its arguments itself
		}
		c.Args = func(cmd *cobra.Command, args []string) error { return usageErr(check(cmd, args)) }
	}
}
