package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("run: not implemented yet") },
	}
}
