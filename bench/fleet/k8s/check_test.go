package k8s

import (
	"errors"
	"strings"
	"testing"

	"github.com/servebench/servebench/engine/option"
)

// TestCheckNamesTheFlag: each value Kubernetes would refuse is named with
// its option's field (the command words it as the flag), and the first of
// several wins in the flags' order.
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
		{func(o *JobOptions) { o.Name = "" }, `Name ""`},
		{func(o *JobOptions) { o.Namespace = "Bad_NS" }, `Namespace "Bad_NS"`},
		{func(o *JobOptions) { o.ServiceAccount = "-sa" }, `ServiceAccount "-sa"`},
		{func(o *JobOptions) { withKey(o); o.APIKeySecret = "Bad_Secret" }, `APIKeySecret "Bad_Secret"`},
		{func(o *JobOptions) { withKey(o); o.APIKeySecretKey = "a key" }, `APIKeySecretKey "a key"`},
		{func(o *JobOptions) { withKey(o); o.APIKeyEnv = "1KEY" }, `APIKeyEnv "1KEY"`},
		{func(o *JobOptions) { o.ResultsClaim = "Bad_Claim" }, `ResultsClaim "Bad_Claim"`},
		{func(o *JobOptions) { o.Command = "soak" }, `Command "soak"`},
		{func(o *JobOptions) { o.Namespace, o.Image = "Bad_NS", "" }, `Namespace "Bad_NS"`},
		{func(o *JobOptions) { o.Image, o.ResultsTo = "", "stdout" }, "Image"},
	} {
		o := good
		tc.set(&o)
		err := check(o)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one starting %s", o, err, tc.want)
		}
		if fe := (*option.FieldError)(nil); !errors.As(err, &fe) || !strings.HasPrefix(tc.want, fe.Field+" ") && tc.want != fe.Field {
			t.Errorf("%+v: error %v: want an option.FieldError of the field named", o, err)
		}
	}
	// A key's variable name is checked only with a Secret to fill it from.
	o := good
	o.APIKeyEnv = "1KEY"
	if err := check(o); err != nil {
		t.Errorf("--api-key-env without --api-key-secret: %v, want accepted", err)
	}
}
