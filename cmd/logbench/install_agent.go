package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func init() {
	subcommands = append(subcommands, newInstallAgentCommand)
}

// newInstallAgentCommand copies this binary to a path, so that the agent Job's init
// container can hand it to the PostgreSQL image, whose pgbench the agent runs.
func newInstallAgentCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "install-agent TARGET",
		Short:  "Copy the logbench binary to TARGET (used by the runners)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("locating the logbench binary: %w", err)
			}
			return copyExecutable(self, args[0])
		},
	}
}

func copyExecutable(source, target string) error {
	in, err := os.Open(source)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only: closing loses nothing
	out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("installing the agent to %s: %w", target, err)
	}
	_, copyErr := io.Copy(out, in)
	return errors.Join(copyErr, out.Close())
}
