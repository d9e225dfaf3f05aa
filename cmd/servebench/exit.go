package main

import (
	"errors"
)

// Exit codes, as documented in the README. exitCode is the one place that
// maps errors to them.
const (
	exitOK          = 0
	exitRegression  = 1 // compare found a regression
	exitUsage       = 2 // bad usage or input
	exitInvalidRun  = 3 // server failed to start or died, every request failed, harness overloaded
	exitInterrupted = 4 // interrupted; partial results saved
	exitResultsIO   = 5 // the results could not be written or read back (disk full, folder removed): nothing about the server
)

// exitError carries the exit code a command wants for err.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withExit tags err with an exit code; nil stays nil.
func withExit(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

// usageErr tags err as bad usage or input (exit 2).
func usageErr(err error) error { return withExit(exitUsage, err) }

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitInvalidRun
}
