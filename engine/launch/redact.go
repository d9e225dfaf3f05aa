package launch

import (
	"bytes"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces a secret in the server log and its tail.
const Redacted = "REDACTED"

// minSecret is the shortest value treated as a secret: replacing a one- or
// two-letter "key" everywhere would garble the log and hide nothing.
const minSecret = 4

// secretsOf lists what must not reach server.log or an error message: the
// key the probes send (Spec.APIKey) and every secret RedactArgs finds on the
// command line (--api-key values, tokens in VAR=VALUE assignments, URL
// passwords), also inside a `sh -c '...'` string. Servers log their
// arguments (vLLM: "non-default args: {..., 'api_key': [...]}").
func secretsOf(spec Spec) []string {
	var out []string
	add := func(v string) {
		v = strings.Trim(v, `'"`)
		if len(v) >= minSecret && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	add(spec.APIKey)
	_, found := redactArgs(spec.Command, 0)
	for _, v := range found {
		add(v)
	}
	return out
}

// RedactArgs returns a copy of args (a command line: servebench's own, or a
// server's) with secrets replaced by REDACTED. It is the one redaction of
// command lines, for results.json, report.md and the secrets servebench
// keeps out of server.log:
//   - values of secret flags: --api-key, --hf-token, --token, --password,
//     --secret and any flag ending -token, -password, -secret or -api-key,
//     as "--flag X" or "--flag=X", also passed on through another flag
//     ("--engine-arg=--api-key=X", "--engine-arg=--api-key --engine-arg=X");
//   - values of VAR=VALUE assignments whose name holds TOKEN, KEY, SECRET or
//     PASSWORD (env HF_TOKEN=... vllm serve ...);
//   - URL passwords (http://user:pass@host becomes http://user:xxxxx@host,
//     as (*url.URL).Redacted writes it);
//   - Authorization headers and bearer tokens;
//
// inside any argument that is itself a command (--server-cmd, sh -c '...'),
// split as a shell would, so a quoted value with blanks goes whole.
// Environment variable names (--api-key-env) are kept: they are not secrets.
func RedactArgs(args []string) []string {
	out, _ := redactArgs(args, 0)
	return out
}

// maxRedactDepth bounds how deep commands nested in arguments are split.
const maxRedactDepth = 4

// redactArgs is RedactArgs that also returns the values it replaced.
func redactArgs(args []string, depth int) (out, secrets []string) {
	out = make([]string, len(args))
	redactNext := false
	for i, a := range args {
		a, found := redactURLs(a)
		secrets = append(secrets, found...)
		prefix, v := splitPassThrough(a)
		switch {
		case redactNext && v == "--engine-arg":
			out[i] = a // --engine-arg --api-key --engine-arg KEY: the key is next
			continue
		case redactNext:
			out[i] = prefix + Redacted
			secrets = append(secrets, v)
			redactNext = false
			continue
		case isSecretFlag(v):
			redactNext = true
		}
		if k, val, ok := strings.Cut(v, "="); ok && (isSecretFlag(k) || isSecretVar(k)) {
			out[i] = prefix + k + "=" + Redacted
			secrets = append(secrets, val)
			continue
		}
		out[i], found = redactInline(a, depth)
		secrets = append(secrets, found...)
	}
	return out, secrets
}

// isSecretFlag reports whether a flag's value is a secret.
func isSecretFlag(f string) bool {
	if !strings.HasPrefix(f, "-") {
		return false
	}
	name := strings.ReplaceAll(strings.ToLower(strings.TrimLeft(f, "-")), "_", "-")
	switch name {
	case "api-key", "hf-token", "token", "password", "secret":
		return true
	}
	for _, suffix := range []string{"-token", "-password", "-secret", "-api-key"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// isSecretVar reports whether NAME (of a NAME=VALUE assignment) names a
// secret: HF_TOKEN, VLLM_API_KEY, AWS_SECRET_ACCESS_KEY, PGPASSWORD...
// TOKENIZERS_PARALLELISM and the like are settings, not secrets.
func isSecretVar(name string) bool {
	if name == "" || strings.HasPrefix(name, "-") || strings.ContainsFunc(name, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		return false
	}
	up := strings.ToUpper(name)
	if strings.Contains(up, "TOKENIZER") {
		return false
	}
	for _, w := range []string{"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD"} {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// splitPassThrough splits "--flag=VALUE" into "--flag=" and VALUE (a flag
// whose value is another flag, as --engine-arg takes, or a URL); a secret
// flag's own "--api-key=X", and any other argument, come back whole.
func splitPassThrough(a string) (prefix, v string) {
	if strings.HasPrefix(a, "--") {
		if k, rest, ok := strings.Cut(a, "="); ok && !isSecretFlag(k) {
			return k + "=", rest
		}
	}
	return "", a
}

// redactInline redacts secrets inside one argument: a header value, or a
// command (--server-cmd, a sh -c script) split into words as the shell
// would and joined again, quoted, only when something was redacted.
func redactInline(a string, depth int) (string, []string) {
	low := strings.ToLower(a)
	if strings.Contains(low, "authorization:") || strings.Contains(low, "bearer ") {
		var found []string
		if i := strings.Index(low, "bearer "); i >= 0 && len(low) == len(a) {
			if f := strings.Fields(a[i+len("bearer "):]); len(f) > 0 {
				found = append(found, f[0]) // the token, kept out of the log too
			}
		}
		return Redacted, found
	}
	if depth >= maxRedactDepth || !strings.ContainsAny(a, " \t\n") {
		return a, nil
	}
	words, err := SplitCommand(a)
	if err != nil {
		words = strings.Fields(a)
	}
	if len(words) < 2 {
		return a, nil
	}
	out, found := redactArgs(words, depth+1)
	if slices.Equal(out, words) {
		return a, found
	}
	for i, w := range out {
		out[i] = shellQuote(w)
	}
	return strings.Join(out, " "), found
}

// shellQuote quotes w for a POSIX shell when it needs it.
func shellQuote(w string) string {
	if w != "" && !strings.ContainsFunc(w, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r))
	}) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// urlPattern finds URLs inside an argument (a flag value, a command).
var urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s'"]+`)

// redactURLs replaces every URL with a password in s by its Redacted form
// and returns the passwords.
func redactURLs(s string) (string, []string) {
	if !strings.Contains(s, "@") {
		return s, nil
	}
	var found []string
	s = urlPattern.ReplaceAllStringFunc(s, func(m string) string {
		u, err := url.Parse(m)
		if err != nil || u.User == nil {
			return m
		}
		pw, ok := u.User.Password()
		if !ok {
			return m
		}
		found = append(found, pw)
		return u.Redacted()
	})
	return s, found
}

// RedactURL is a URL with its password, if any, replaced (for results that
// record a server's URL).
func RedactURL(u string) string {
	s, _ := redactURLs(u)
	return s
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
