//go:build !linux

package store

import (
	"errors"
	"os"
)

// openUnnamed: only Linux opens a file without a name; elsewhere Spill
// names the file and unlinks it at once.
func openUnnamed(string) (*os.File, error) { return nil, errors.ErrUnsupported }
