package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// openUnnamed opens a file in dir that has no name at any moment (Linux's
// O_TMPFILE), so that not even a kill between creating and unlinking a
// named file can leave it behind. A file system without O_TMPFILE answers
// an error, and the caller falls back to a named file unlinked at once.
func openUnnamed(dir string) (*os.File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir+"/.servebench-samples (unnamed)"), nil
}
