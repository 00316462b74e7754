// Command logbench measures what PostgreSQL logging costs. One binary serves every role:
// the Kubernetes operator, the in-cluster agent that runs pgbench, the local runner and
// the report renderer.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/logbench/logbench/internal/version"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	build := version.Get()
	root := &cobra.Command{
		Use:           "logbench",
		Short:         "Measure what PostgreSQL logging really costs",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: displayName(os.Args[0])},
		// --version prints what the version subcommand prints.
		Version: build.Version,
	}
	root.SetVersionTemplate(build.String())
	for _, newSubcommand := range subcommands {
		root.AddCommand(newSubcommand())
	}
	return root
}

// subcommands is filled by the init functions of the files beside this one, one file a
// subcommand, so that they stay independent. Constructors rather than commands: every
// root command gets fresh flags.
var subcommands []func() *cobra.Command
