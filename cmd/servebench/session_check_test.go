package main

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/option"
)

// TestSessionCheckIsPure: checking the shared flags reads no file and sets
// nothing; load, after it, derives the fields once and reads the files the
// flags name, failing on each missing one in turn.
func TestSessionCheckIsPure(t *testing.T) {
	dir := t.TempDir()
	tools, limits, baseline := filepath.Join(dir, "tools.json"), filepath.Join(dir, "limits.json"), filepath.Join(dir, "baseline")
	o := &sessionOptions{}
	cmd := runCmdFor(o)
	if err := cmd.Flags().Parse([]string{"--tools", tools, "--limits-from", limits, "--baseline", baseline,
		"--slo", "ttft=1s", "--label", "k=v", "--lora", "a,b", "--pushgateway", "http://127.0.0.1:9091"}); err != nil {
		t.Fatal(err)
	}
	before := *o
	if err := o.check(cmd.Flags()); err != nil {
		t.Fatalf("check read a file the flags name: %v", err)
	}
	if !reflect.DeepEqual(*o, before) {
		t.Errorf("check changed the options:\n got %+v\nwant %+v", *o, before)
	}
	for _, missing := range []struct{ flag, file string }{{"tools", tools}, {"limits-from", limits}, {"baseline", baseline}} {
		err := o.load(cmd.Flags())
		if err == nil || !strings.Contains(err.Error(), missing.file) && !strings.Contains(err.Error(), "--"+missing.flag) {
			t.Fatalf("load with --%s missing: %v", missing.flag, err)
		}
		if err := cmd.Flags().Set(missing.flag, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.load(cmd.Flags()); err != nil {
		t.Fatal(err)
	}
	if o.slo.IsZero() || o.labels["k"] != "v" || o.lora == nil || o.pushOpts == nil || o.base != nil {
		t.Errorf("load derived slo %v, labels %v, lora %v, push %v, base %v", o.slo, o.labels, o.lora, o.pushOpts, o.base)
	}
}

// TestSessionSourceAfterCheck: the source flags are checked with the
// others and the file they name is read after every flag is checked: a
// sweep plans with --dataset, --prompt-file or --trace missing and
// loadSource then refuses it, naming the option; run reports a bad shared
// flag before a missing dataset, and the missing dataset alone by its flag.
func TestSessionSourceAfterCheck(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"--dataset", "jsonl:" + missing, "--turns", "all", "--think-time", "1", "--output-tokens", "8"}, "Dataset"},
		{[]string{"--prompt-file", missing}, "PromptFile"},
		{[]string{"--find-max-rate", "90%", "--slo", "ttft=1s", "--dataset", "sharegpt:" + missing}, "Dataset"},
	} {
		cmd, so := sweepCommand()
		if err := cmd.Flags().Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		p, err := so.plan(cmd.Flags(), io.Discard)
		if err == nil {
			err = so.check(cmd.Flags())
		}
		if err != nil {
			t.Errorf("%q: the flags' check read a file: %v", tc.args, err)
			continue
		}
		err = p.loadSource(cmd.Flags())
		if fe := (*option.FieldError)(nil); !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%q: loadSource: %v, want the missing file naming %s", tc.args, err, tc.field)
		}
	}
	_, _, stderr := runMain("run", "--dataset", "jsonl:"+missing, "--label", "bad label")
	if !strings.Contains(stderr, "--label") || strings.Contains(stderr, missing) {
		t.Errorf("run with a bad --label and a missing --dataset: %q, want the --label error (flags before files)", stderr)
	}
	_, _, stderr = runMain("run", "--dataset", "jsonl:"+missing)
	if !strings.Contains(stderr, "--dataset: open "+missing) {
		t.Errorf("run with a missing --dataset: %q, want it named by its flag", stderr)
	}
}
