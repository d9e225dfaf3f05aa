package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newStartupCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "startup",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("startup: not implemented yet") },
	}
}
