package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(stub): replaced by the real command.
func newScrapeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "scrape",
		Short: "not implemented yet",
		RunE:  func(*cobra.Command, []string) error { return errors.New("scrape: not implemented yet") },
	}
}
