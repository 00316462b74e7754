//go:build docs

// The hidden docs command is built only with the docs tag (make docs, make test), so
// that cobra/doc and its Markdown and man page renderers stay out of the released binary.

package main

import (
	"bytes"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// cliReference is the CLI reference make docs writes, relative to the repository's root.
const cliReference = "docs/reference/cli.md"

func init() {
	subcommands = append(subcommands, newDocsCommand)
}

// newDocsCommand writes the CLI reference from the commands' own help, so that it cannot
// drift from them. Hidden: it serves the project's docs, not the binary's users.
func newDocsCommand() *cobra.Command {
	output := cliReference
	cmd := &cobra.Command{
		Use:    "docs",
		Short:  "Write the CLI reference in Markdown from the commands' help",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var reference bytes.Buffer
			if err := writeCLIReference(&reference, cmd.Root()); err != nil {
				return err
			}
			return os.WriteFile(output, reference.Bytes(), 0o644)
		},
	}
	cmd.Flags().StringVar(&output, "output-file", output, "file to write the reference to")
	return cmd
}

// writeCLIReference writes one Markdown page of root and every command a user can run
// below it, each as a section whose links point at the others' anchors.
func writeCLIReference(w io.Writer, root *cobra.Command) error {
	// The completion command and the --version flag are added to the root when it
	// executes a command of its own: add them here, so that the reference shows them
	// and is the same whether the binary or a test writes it.
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	if _, err := io.WriteString(w, "# CLI reference\n\n"+
		"Generated from the commands' own help by `make docs` (`go run -tags docs ./cmd/logbench docs`): "+
		"edit the commands, not this page. `kubectl logbench` is the same binary installed as "+
		"`kubectl-logbench`.\n\n"); err != nil {
		return err
	}
	var write func(*cobra.Command) error
	write = func(cmd *cobra.Command) error {
		// The date cobra stamps would change the page at every generation.
		cmd.DisableAutoGenTag = true
		if err := doc.GenMarkdownCustom(cmd, w, sectionLink); err != nil {
			return err
		}
		children := slices.Clone(cmd.Commands())
		slices.SortFunc(children, func(a, b *cobra.Command) int { return strings.Compare(a.Name(), b.Name()) })
		for _, child := range children {
			if !child.IsAvailableCommand() || child.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := write(child); err != nil {
				return err
			}
		}
		return nil
	}
	return write(root)
}

// sectionLink turns the file name cobra gives a command's page, "logbench_report.md",
// into the anchor of its section on the one page, "#logbench-report".
func sectionLink(page string) string {
	return "#" + strings.ReplaceAll(strings.TrimSuffix(page, ".md"), "_", "-")
}
