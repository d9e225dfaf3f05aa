package launch

import (
	"bytes"
	"io"
	"strings"
)

// Redacted replaces a secret in the server log and its tail.
const Redacted = "REDACTED"

// minSecret is the shortest value treated as a secret: replacing a one- or
// two-letter "key" everywhere would garble the log and hide nothing.
const minSecret = 4

// secretsOf lists what must not reach server.log or an error message: the
// key the probes send (Spec.APIKey) and every --api-key value on the
// command line, also inside a `sh -c '...'` string. Servers log their
// arguments (vLLM: "non-default args: {..., 'api_key': [...]}").
func secretsOf(spec Spec) []string {
	var out []string
	add := func(v string) {
		v = strings.Trim(v, `'"`)
		if len(v) >= minSecret {
			out = append(out, v)
		}
	}
	add(spec.APIKey)
	var words []string // the arguments and the words inside them (sh -c strings)
	for _, arg := range spec.Command {
		words = append(words, strings.Fields(arg)...)
	}
	for i, w := range words {
		switch {
		case w == "--api-key" && i+1 < len(words):
			add(words[i+1])
		case strings.HasPrefix(w, "--api-key="):
			add(strings.TrimPrefix(w, "--api-key="))
		}
	}
	return out
}

// redactWriter writes through to w with every secret replaced. It holds
// back the last longest-secret-minus-one bytes of each write, so a secret
// split across two reads of the child's pipe is still caught; Flush writes
// them. Not safe for concurrent use (readLog is its only writer).
type redactWriter struct {
	w       io.Writer
	secrets [][]byte
	keep    int
	pend    []byte
}

func newRedactWriter(w io.Writer, secrets []string) *redactWriter {
	r := &redactWriter{w: w}
	for _, s := range secrets {
		r.secrets = append(r.secrets, []byte(s))
		r.keep = max(r.keep, len(s)-1)
	}
	return r
}

// Write never fails the caller: a full disk must not stop the server.
func (r *redactWriter) Write(p []byte) (int, error) {
	if len(r.secrets) == 0 {
		return r.w.Write(p)
	}
	r.pend = append(r.pend, p...)
	r.replace()
	if n := len(r.pend) - r.keep; n > 0 {
		_, err := r.w.Write(r.pend[:n])
		r.pend = append(r.pend[:0], r.pend[n:]...)
		if err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes what Write held back.
func (r *redactWriter) Flush() error {
	r.replace()
	_, err := r.w.Write(r.pend)
	r.pend = r.pend[:0]
	return err
}

func (r *redactWriter) replace() {
	for _, s := range r.secrets {
		if bytes.Contains(r.pend, s) {
			r.pend = bytes.ReplaceAll(r.pend, s, []byte(Redacted))
		}
	}
}

// redactString replaces every secret in s.
func redactString(s string, secrets []string) string {
	for _, k := range secrets {
		s = strings.ReplaceAll(s, k, Redacted)
	}
	return s
}
