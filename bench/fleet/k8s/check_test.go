package k8s

import (
	"strings"
	"testing"
)

// TestCheckNamesTheFlag: each value Kubernetes would refuse is named with
// its flag, and the first of several wins in the flags' order.
func TestCheckNamesTheFlag(t *testing.T) {
	good := JobOptions{Name: "sb", Image: "sb", Shards: 2}
	if err := check(good); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	withKey := func(o *JobOptions) {
		o.APIKeySecret, o.APIKeySecretKey, o.APIKeyEnv = "vllm-key", "key", "OPENAI_API_KEY"
	}
	for _, tc := range []struct {
		set  func(*JobOptions)
		want string
	}{
		{func(o *JobOptions) { o.Name = "" }, `--name ""`},
		{func(o *JobOptions) { o.Namespace = "Bad_NS" }, `--namespace "Bad_NS"`},
		{func(o *JobOptions) { o.ServiceAccount = "-sa" }, `--service-account "-sa"`},
		{func(o *JobOptions) { withKey(o); o.APIKeySecret = "Bad_Secret" }, `--api-key-secret "Bad_Secret"`},
		{func(o *JobOptions) { withKey(o); o.APIKeySecretKey = "a key" }, `--api-key-secret-key "a key"`},
		{func(o *JobOptions) { withKey(o); o.APIKeyEnv = "1KEY" }, `--api-key-env "1KEY"`},
		{func(o *JobOptions) { o.ResultsClaim = "Bad_Claim" }, `--results-claim "Bad_Claim"`},
		{func(o *JobOptions) { o.Command = "soak" }, `--command "soak"`},
		{func(o *JobOptions) { o.Namespace, o.Image = "Bad_NS", "" }, `--namespace "Bad_NS"`},
		{func(o *JobOptions) { o.Image, o.ResultsTo = "", "stdout" }, "--image"},
	} {
		o := good
		tc.set(&o)
		if err := check(o); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one starting %s", o, err, tc.want)
		}
	}
	// A key's variable name is checked only with a Secret to fill it from.
	o := good
	o.APIKeyEnv = "1KEY"
	if err := check(o); err != nil {
		t.Errorf("--api-key-env without --api-key-secret: %v, want accepted", err)
	}
}
