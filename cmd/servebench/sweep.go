package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newSweepCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "sweep",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("sweep: not implemented yet") },
	}
}
