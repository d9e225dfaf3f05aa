package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/servebench/servebench/engine/launch"
	"github.com/servebench/servebench/scrape/promql"
)

// promFlags choose Prometheus as the engine-metrics source (table, run,
// sweep): --prometheus-url, --prometheus-selector, --prometheus-wait.
type promFlags struct {
	url, selector string
	wait          time.Duration
}

func (p *promFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&p.url, "prometheus-url", "", "read engine figures from this Prometheus server's HTTP API over each run's window, instead of scraping /metrics")
	fs.StringVar(&p.selector, "prometheus-selector", "", `with --prometheus-url: label matchers added to every query, e.g. '{namespace="llm",job="vllm"}'`)
	fs.DurationVar(&p.wait, "prometheus-wait", 0, "with --prometheus-url: wait at most this long for a scrape after a run's end (default 3 scrape intervals)")
}

// options checks the flags and returns the source's options; nil without
// --prometheus-url. metricsURLs are the --metrics-url values (one source only).
func (p *promFlags) options(fs *pflag.FlagSet, metricsURLs []string) (*promql.Options, error) {
	if p.url == "" {
		for _, f := range []string{"prometheus-selector", "prometheus-wait"} {
			if fs.Changed(f) {
				return nil, fmt.Errorf("--%s without --prometheus-url: expected a Prometheus server to query", f)
			}
		}
		return nil, nil
	}
	if len(metricsURLs) > 0 {
		return nil, errors.New("--prometheus-url and --metrics-url: expected one source of engine figures")
	}
	if _, err := launch.ParseBaseURL(p.url); err != nil {
		return nil, fmt.Errorf("--prometheus-url: %w", err)
	}
	sel, err := promql.ParseSelector(p.selector)
	if err != nil {
		return nil, fmt.Errorf("--prometheus-selector: %w", err)
	}
	if p.wait < 0 {
		return nil, fmt.Errorf("--prometheus-wait %v: expected a duration >= 0", p.wait)
	}
	return &promql.Options{URL: p.url, Selector: sel, Wait: p.wait}, nil
}
