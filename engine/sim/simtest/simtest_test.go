package simtest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/sim"
	"github.com/servebench/servebench/engine/sim/simtest"
)

func TestStartServesAndCleanupStops(t *testing.T) {
	var url string
	t.Run("engine", func(t *testing.T) {
		e := simtest.Start(t, func(o *sim.Options) { o.StartupSpeedup = 1000 })
		url = e.BaseURL()
		if !strings.HasPrefix(url, "http://127.0.0.1:") || strings.HasSuffix(url, ":8000") {
			t.Fatalf("BaseURL %q, want 127.0.0.1 on a free port", url)
		}
		resp, err := http.Get(url + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/health: %s", resp.Status)
		}
	})
	if _, err := http.Get(url + "/health"); err == nil {
		t.Errorf("engine at %s still serving after its test's cleanup", url)
	}
}
