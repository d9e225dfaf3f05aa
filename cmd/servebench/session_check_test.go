package main

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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
