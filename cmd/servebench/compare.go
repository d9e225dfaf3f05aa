package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newCompareCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compare",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("compare: not implemented yet") },
	}
}
