package main

import "bytes"

// runMain runs the whole CLI in-process, as a user's shell would run it,
// and returns the exit code and what it printed.
func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}
