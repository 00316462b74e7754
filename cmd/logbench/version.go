package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/logbench/logbench/internal/version"
)

func init() {
	subcommands = append(subcommands, newVersionCommand)
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and build date of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), version.Get())
			return err
		},
	}
}
