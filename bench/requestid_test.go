package bench

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/servebench/servebench/bench/result"
	"github.com/servebench/servebench/report"
)

// TestRequestIDsEndToEnd: against the bundled engine as a child process,
// every request carries its own X-Request-Id, requests.jsonl keeps it, the
// engine's log (server.log) names each request by it on receipt and
// finish, and report.md lists the slowest requests with those lines.
func TestRequestIDsEndToEnd(t *testing.T) {
	cfg := childConfig(t, 6)
	cfg.Runs[0].Name = "c=1 streaming" // a name that is not one word: the id keeps it one
	cfg.RequestIDs = true
	res, recs, err := Execute(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if !strings.Contains(res.Server.Command, "--enable-log-requests") {
		t.Errorf("bundled engine started without --enable-log-requests: %s", res.Server.Command)
	}
	_, onDisk, _, err := result.Load(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(cfg.Dir, result.ServerLog))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^sb-c_1_streaming-(\d+)-[0-9a-f]{8}$`)
	seen := map[string]bool{}
	for i, r := range onDisk {
		m := re.FindStringSubmatch(r.RequestID)
		if m == nil || m[1] != strconv.Itoa(r.Index) || seen[r.RequestID] {
			t.Errorf("requests.jsonl line %d: request_id %q (index %d): want a unique sb-c_1_streaming-%d-XXXXXXXX", i+1, r.RequestID, r.Index, r.Index)
			continue
		}
		seen[r.RequestID] = true
		for _, want := range []string{"Received request chatcmpl-" + r.RequestID + ":", "Finished request chatcmpl-" + r.RequestID + "."} {
			if !strings.Contains(string(log), want) {
				t.Errorf("server.log lacks %q", want)
			}
		}
	}
	if len(seen) != 6 {
		t.Errorf("%d distinct ids in requests.jsonl, want 6", len(seen))
	}

	if err := report.WriteSampled(cfg.Dir, res, recs, nil); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(cfg.Dir, result.ReportFile))
	sec := string(md[strings.Index(string(md), "## Slowest requests"):])
	slow := report.Slowest(recs, report.SlowestN)
	if len(slow) != report.SlowestN {
		t.Fatalf("%d slowest, want %d", len(slow), report.SlowestN)
	}
	for _, r := range slow {
		if !strings.Contains(sec, "`"+r.RequestID+"`") || !strings.Contains(sec, "Finished request chatcmpl-"+r.RequestID+".") {
			t.Errorf("report.md's slowest requests lack %s or its server.log line:\n%s", r.RequestID, sec)
		}
	}
	fastest := slices.MinFunc(recs, func(a, b result.Record) int { return cmp.Compare(a.E2ES, b.E2ES) })
	if strings.Contains(sec, fastest.RequestID) {
		t.Errorf("the fastest request %s is listed among the 5 slowest of 6", fastest.RequestID)
	}
}
