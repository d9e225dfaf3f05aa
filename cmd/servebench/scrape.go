package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/scrape"
)

// scrapeFormats are the output formats of `servebench scrape`.
var scrapeFormats = []string{"text", "json"}

// scrapeOptions is everything `servebench scrape` reads from its flags.
type scrapeOptions struct {
	URLs    []string
	File    string
	Model   string
	Format  string
	Timeout time.Duration
}

func newScrapeCmd() *cobra.Command {
	opts := &scrapeOptions{}
	cmd := &cobra.Command{
		Use:   "scrape [URL...] | --file FILE",
		Short: "Read a server's /metrics and print the engine quantities servebench uses",
		Long: `scrape fetches /metrics from a running server (or reads a saved copy with
--file), detects the server's metric dialect (vllm, sglang, tgi, llamacpp) and
prints the canonical engine quantities: TTFT, E2E, queue, prefill, decode and
inter-token latency histograms, token and request counters, running/waiting
and KV-cache usage gauges. One snapshot shows cumulative totals since the
server started. Several URLs (replicas behind one endpoint) are summed.
A URL without a path gets /metrics appended.

With --format json the output is
  {"dialect": "vllm", "quantities": {"engine.ttft_s": {"count": N, "sum": S, "mean": M},
   "engine.generation_tokens": {"value": V}, ...}}
and quantities the server does not export are left out.`,
		Example: `  servebench scrape http://127.0.0.1:8000
  servebench scrape --file metrics.txt --format json
  servebench scrape --model qwen2.5-7b http://10.0.0.1:8000/metrics http://10.0.0.2:8000/metrics`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.URLs = args
			return runScrape(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.File, "file", "", "read a saved /metrics exposition instead of fetching a URL")
	f.StringVar(&opts.Model, "model", "", "only series of this model_name (default: sum over all models)")
	f.StringVar(&opts.Format, "format", "text", "output format: "+strings.Join(scrapeFormats, "|"))
	f.DurationVar(&opts.Timeout, "timeout", scrape.DefaultTimeout, "limit for fetching /metrics")
	return cmd
}

func runScrape(ctx context.Context, opts *scrapeOptions, stdout, stderr io.Writer) error {
	if !slices.Contains(scrapeFormats, opts.Format) {
		return usageErr(fmt.Errorf("--format %q: want one of %s", opts.Format, strings.Join(scrapeFormats, ", ")))
	}
	if opts.Timeout <= 0 {
		return usageErr(fmt.Errorf("--timeout %s: want a positive duration such as 10s", opts.Timeout))
	}
	var snap *scrape.Snapshot
	var err error
	switch {
	case opts.File != "" && len(opts.URLs) > 0:
		return usageErr(errors.New("give either URLs or --file, not both"))
	case opts.File != "":
		snap, err = scrape.ParseFile(opts.File)
	case len(opts.URLs) > 0:
		urls := make([]string, len(opts.URLs))
		for i, u := range opts.URLs {
			if urls[i], err = metricsURL(u); err != nil {
				return usageErr(err)
			}
		}
		ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		if snap, err = scrape.FetchAll(ctx, nil, urls); err != nil {
			// The URL was well formed: the server is unreachable or failed.
			return withExit(exitInvalidRun, err)
		}
	default:
		return usageErr(errors.New("nothing to read: give a /metrics URL or --file FILE"))
	}
	if err != nil {
		return usageErr(err)
	}
	r, err := scrape.Read(snap, nil, scrape.Filter{Model: opts.Model})
	if err != nil {
		return usageErr(err)
	}
	if opts.Format == "json" {
		// JSON stays exactly the documented shape; caveats go to stderr.
		for _, w := range r.Totals.Warnings() {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		return r.WriteJSON(stdout)
	}
	return r.WriteText(stdout)
}

// metricsURL checks raw is an http(s) URL and appends /metrics when it has
// no path, so a server's base URL works as well.
func metricsURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("metrics URL %q: want http://host[:port][/metrics]", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	return u.String(), nil
}
