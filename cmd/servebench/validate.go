package main

import (
	"errors"
	"io/fs"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// validateFlag is a hidden root flag: parse the flags and run each
// command's option checks, then stop before a server is started, a request
// sent or a result written. TestDocCommands runs every command line of the
// README and docs/ this way, so the docs cannot drift from the CLI.
const validateFlag = "validate"

// validatesItself marks a command whose RunE stops at the right place on
// --validate (after its own checks); any other stops before its RunE, once
// cobra has parsed its flags and arguments.
const validatesItself = "servebench/validates-itself"

// validating says whether the hidden --validate flag is set on fs.
func validating(fs *pflag.FlagSet) bool {
	v, err := fs.GetBool(validateFlag)
	return err == nil && v
}

// missingOnValidate forgives, under --validate, a file that does not exist:
// the docs name files (a dataset, a trace, a baseline) that are the reader's,
// not the test machine's. Every other error stands.
func missingOnValidate(flags *pflag.FlagSet, err error) error {
	if err != nil && validating(flags) && errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// addValidate adds --validate to root and makes every command that does not
// validate itself stop before its RunE under it.
func addValidate(root *cobra.Command) {
	root.PersistentFlags().Bool(validateFlag, false, "parse the flags and check the options, then stop (nothing is started, read or sent)")
	_ = root.PersistentFlags().MarkHidden(validateFlag)
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			wrap(sub)
		}
		run := c.RunE
		if run == nil || c.Annotations[validatesItself] != "" {
			return
		}
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if validating(cmd.Flags()) {
				return nil
			}
			return run(cmd, args)
		}
	}
	wrap(root)
}
