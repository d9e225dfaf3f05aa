package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newProbeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "probe",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("probe: not implemented yet") },
	}
}
