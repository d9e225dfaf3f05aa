package result

import "github.com/servebench/servebench/engine/option"

// FieldError is engine/option's error of a bad option, named by its field
// (cmd/servebench words it as the flag), here for report's packages, which
// import no engine package. One type: errors.As finds either name.
type FieldError = option.FieldError

// OptionErrorf is option.Errorf: the FieldError of field with value, its
// reason a format of a naming fields as {Field}.
func OptionErrorf(field string, value any, format string, a ...any) *FieldError {
	return option.Errorf(field, value, format, a...)
}
