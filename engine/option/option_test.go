package option

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestFieldErrorText(t *testing.T) {
	cause := errors.New("unknown GPU")
	flags := func(f string) string { return "--" + strings.ToLower(f) }
	for _, c := range []struct {
		err         *FieldError
		plain, flag string
	}{
		// The field, its value (a string quoted) and the reason.
		{Errorf("Retries", 7, "expected 0-%d", 5), "Retries 7: expected 0-5", "--retries 7: expected 0-5"},
		{Errorf("Host", "nowhere", "cannot listen there"), `Host "nowhere": cannot listen there`, `--host "nowhere": cannot listen there`},
		{Errorf("Interval", -time.Second, "expected a duration >= 0"), "Interval -1s: expected a duration >= 0", "--interval -1s: expected a duration >= 0"},
		// No value: the field alone; other fields named in the reason.
		{Errorf("Speedup", nil, "only with {Bundled}"), "Speedup: only with Bundled", "--speedup: only with --bundled"},
		// A reason naming its own field is the whole message.
		{Errorf("Target", nil, "{Target} needs {SLO}: an attainment is of an SLO"), "Target needs SLO: an attainment is of an SLO", "--target needs --slo: an attainment is of an SLO"},
		// A cause after the reason, as it is.
		{&FieldError{Field: "GPU", Err: cause}, "GPU: unknown GPU", "--gpu: unknown GPU"},
		// Braces that name no field stay.
		{Errorf("Body", nil, `expected {"a": 1} or {x}`), `Body: expected {"a": 1} or {x}`, `--body: expected {"a": 1} or {x}`},
	} {
		if got := c.err.Error(); got != c.plain {
			t.Errorf("Error() = %q, want %q", got, c.plain)
		}
		if got := c.err.Text(flags); got != c.flag {
			t.Errorf("Text(flags) = %q, want %q", got, c.flag)
		}
	}
}

func TestFieldErrorAs(t *testing.T) {
	cause := errors.New("cause")
	err := fmt.Errorf("run a: %w", Wrap("MaxTokens", 0, cause))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "MaxTokens" || fe.Value != 0 || !errors.Is(err, cause) {
		t.Errorf("errors.As: %#v, Is(cause) %v: want the MaxTokens error wrapping its cause", fe, errors.Is(err, cause))
	}
	if Wrap("X", nil, nil) != nil {
		t.Error("Wrap of a nil error: want nil")
	}
}

// TestFieldErrorArgsNotRead: what a user typed, in the reason's operands,
// is never read as a field; a format's %% stays a percent.
func TestFieldErrorArgsNotRead(t *testing.T) {
	e := Errorf("Grid", nil, "{Grid} %s: {ServerCmd} has no {%s} placeholder (100%%)", "Foo", "Foo")
	flags := func(f string) string { return "--" + strings.ToLower(f) }
	if got, want := e.Text(flags), "--grid Foo: --servercmd has no {Foo} placeholder (100%)"; got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	if got, want := Errorf("Retries", 1, "expected 0-%d%%", 100).Error(), "Retries 1: expected 0-100%"; got != want {
		t.Errorf("Error = %q, want %q", got, want)
	}
}
