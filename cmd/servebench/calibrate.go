package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/report/compare"
)

// calibrateOptions are calibrate's own flags; the rest are run's.
type calibrateOptions struct {
	falseAlarm float64
	perSide    int
	limitsOut  string
}

// newCalibrateCmd is run with --repeats K that ends in the run-to-run
// spread and the limits instead of a gate.
func newCalibrateCmd() *cobra.Command {
	o := &sessionOptions{}
	c := &calibrateOptions{}
	o.calibrate = c
	cmd := runCmdFor(o)
	cmd.Use = "calibrate"
	cmd.Short = "Measure run-to-run noise: run one workload K times against one build and write the limits that hold a false-alarm rate"
	cmd.Long = `calibrate runs the same workload --repeats K times (default 10) against one build,
exactly as run --repeats does (DIR/repeat-1..K, a fresh server each time servebench
starts one), then prints each quantity's run-to-run spread (mean, SD, CV across runs:
each run's median, p90, throughput... is one observation) and the relative limit
that an unchanged build passes with probability 1 - --false-alarm when --per-side
runs a side are compared by the limit alone:

  limit = t(1 - false-alarm, K-1) * CV * sqrt(2 / per-side)

(one-sided: only a worse change fails the gate; Student t because the CV is itself
estimated from K runs). The limits go to DIR/limits.txt (or --limits-out), one
--max-regression argument a line, for compare --limits-from and --baseline with
--limits-from. Calibrate on the machine and under the load the gate runs on: the
spread is that machine's. Every run flag applies (the workload, the server).`
	cmd.Example = `  servebench calibrate --speedup 10 --concurrency 8 --requests 64 --stream on --out cal/
  servebench calibrate --base-url http://127.0.0.1:8000 --rate 10 --requests 200 --repeats 20 --false-alarm 0.01
  servebench compare --limits-from cal/limits.txt baseline/ new/`
	f := cmd.Flags()
	f.Float64Var(&c.falseAlarm, "false-alarm", 0.05, "false-alarm rate the limits hold, in (0, 1)")
	f.IntVar(&c.perSide, "per-side", 1, "runs a side the gate will compare (1: one run a side, judged by the limits alone)")
	f.StringVar(&c.limitsOut, "limits-out", "", "write the limits here (default DIR/"+compare.LimitsFile+")")
	_ = f.Set("repeats", "10")
	f.Lookup("repeats").DefValue = "10"
	pre := cmd.PreRunE
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if !(c.falseAlarm > 0 && c.falseAlarm < 1) {
			return usageErr(fmt.Errorf("--false-alarm %g: expected a rate in (0, 1), e.g. 0.05", c.falseAlarm))
		}
		if c.perSide < 1 {
			return usageErr(fmt.Errorf("--per-side %d: expected 1 or more runs", c.perSide))
		}
		if o.repeats < 2 {
			return usageErr(fmt.Errorf("--repeats %d: calibrating needs at least 2 runs of one build (10 or more for a useful limit)", o.repeats))
		}
		if pre != nil {
			return pre(cmd, args)
		}
		return nil
	}
	return cmd
}

// finish prints the spread and writes the limits file.
func (c *calibrateOptions) finish(cmd *cobra.Command, dir string, side *compare.Side) error {
	cal, err := compare.Calibrate(side, c.falseAlarm, c.perSide)
	if err != nil {
		return compareExit(err)
	}
	if err := compare.WriteCalibration(cmd.OutOrStdout(), cal); err != nil {
		return err
	}
	path := c.limitsOut
	if path == "" {
		path = filepath.Join(dir, compare.LimitsFile)
	}
	if err := compare.WriteLimitsFile(path, cal); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "limits: %s (compare --limits-from %s)\n", path, path)
	return nil
}
