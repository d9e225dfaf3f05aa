package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newTableCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "table",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("table: not implemented yet") },
	}
}
