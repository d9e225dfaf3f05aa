// Package option is the error of a bad option value, shared by the bundled
// engine (engine/sim, engine/pd, engine/launch), the harness (bench and its
// packages) and report (through bench/result's alias, as report imports no
// engine package): a library names the option by its Go field ("Retries"),
// never by a command-line flag, and cmd/servebench words it as the flag it
// came from ("--retries"). It sits at engine level because engine/ imports
// nothing above it, as engine/dist does.
package option

import (
	"fmt"
	"regexp"
)

// FieldError is a bad option: which field, the value given and what was
// expected. Find it with errors.As; cmd/servebench's flag table maps Field
// (and the fields a Reason names) to flags.
type FieldError struct {
	// Field is the option's field in the options struct its package checks
	// ("Retries", "MaxNumSeqs").
	Field string
	// Value is the value given, shown after the field (a string quoted);
	// nil shows none.
	Value any
	// Reason says what is wrong or expected: a fmt format of Args when
	// they are set (Errorf sets them), else the text. It names fields as
	// {Field}, in the format only: Args, which may hold what a user typed,
	// are never read for fields. A Reason that names its own field
	// ({Retries}) is the whole message, with no "Field value:" before it.
	Reason string
	Args   []any
	// Err, when set, is the cause: another error saying what is wrong,
	// after Reason.
	Err error
}

// Errorf is the FieldError of field with value, its Reason format of a.
func Errorf(field string, value any, format string, a ...any) *FieldError {
	return &FieldError{Field: field, Value: value, Reason: format, Args: append([]any{}, a...)}
}

// Wrap is the FieldError of field with value whose cause is err (nil for a
// nil err).
func Wrap(field string, value any, err error) error {
	if err == nil {
		return nil
	}
	return &FieldError{Field: field, Value: value, Err: err}
}

// Error names the fields as themselves.
func (e *FieldError) Error() string { return e.Text(nil) }

// Unwrap is the cause, if any.
func (e *FieldError) Unwrap() error { return e.Err }

// fieldRef is a field named in a Reason.
var fieldRef = regexp.MustCompile(`\{([A-Z][A-Za-z0-9.]*)\}`)

// Text is the message with each field, this one's and those its Reason
// names, written as name(field): a command passes its flag names; nil keeps
// the field names. A cause's text is as it is (its own FieldErrors are its
// own to map).
func (e *FieldError) Text(name func(field string) string) string {
	if name == nil {
		name = func(f string) string { return f }
	}
	reason := fieldRef.ReplaceAllStringFunc(e.Reason, func(m string) string { return name(m[1 : len(m)-1]) })
	if e.Args != nil {
		reason = fmt.Sprintf(reason, e.Args...)
	}
	msg := reason
	if !e.namesSelf() {
		msg = name(e.Field)
		if e.Value != nil {
			if s, ok := e.Value.(string); ok {
				msg += fmt.Sprintf(" %q", s)
			} else {
				msg += fmt.Sprintf(" %v", e.Value)
			}
		}
		if reason != "" {
			msg += ": " + reason
		}
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// namesSelf reports whether the Reason names the error's own field.
func (e *FieldError) namesSelf() bool {
	for _, m := range fieldRef.FindAllStringSubmatch(e.Reason, -1) {
		if m[1] == e.Field {
			return true
		}
	}
	return false
}
