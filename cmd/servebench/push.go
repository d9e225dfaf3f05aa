package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report/pushgateway"
)

// pushFlags are the Pushgateway flags of table, run and sweep.
type pushFlags struct {
	pushURL    string
	pushJob    string
	pushLabels []string
	pushOpts   *pushgateway.Options // from the flags, by sessionOptions.load; nil: no push
}

func (p *pushFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&p.pushURL, "pushgateway", "", "after the runs, push each run's summary as gauges to this Prometheus Pushgateway URL (a failed push only warns)")
	fs.StringVar(&p.pushJob, "push-job", pushgateway.DefaultJob, "with --pushgateway: the job label")
	fs.StringArrayVar(&p.pushLabels, "push-label", nil, "with --pushgateway: a grouping label NAME=VALUE on every series (repeatable)")
}

// pushOptions are the push options the flags make (nil: no push).
func (p *pushFlags) pushOptions(fs *pflag.FlagSet) (*pushgateway.Options, error) {
	if p.pushURL == "" {
		if fs.Changed("push-job") || len(p.pushLabels) > 0 {
			return nil, errors.New("--push-job and --push-label without --pushgateway: expected a Pushgateway URL")
		}
		return nil, nil
	}
	if err := pushgateway.CheckURL(p.pushURL); err != nil {
		return nil, err
	}
	if p.pushJob == "" {
		return nil, errors.New("--push-job \"\": expected a job name")
	}
	o := &pushgateway.Options{URL: p.pushURL, Job: p.pushJob, Labels: map[string]string{}}
	for _, s := range p.pushLabels {
		k, v, err := pushgateway.ParseLabel(s)
		if err != nil {
			return nil, err
		}
		o.Labels[k] = v
	}
	return o, nil
}

// push pushes res's runs when --pushgateway was given; a failure is a
// warning on stderr: the results are on disk already.
func (p *pushFlags) push(ctx context.Context, stderr io.Writer, res *result.Results) {
	if p.pushOpts == nil || res == nil || len(res.Runs) == 0 {
		return
	}
	if err := pushgateway.Push(ctx, *p.pushOpts, res); err != nil {
		fmt.Fprintf(stderr, "servebench: warning: --pushgateway: %v (the results on disk are complete)\n", err)
	}
}
