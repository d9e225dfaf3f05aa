package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newEngineCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "engine",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("engine: not implemented yet") },
	}
}
