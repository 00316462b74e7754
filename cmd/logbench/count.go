package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/logbench/logbench/internal/records"
)

func init() {
	subcommands = append(subcommands, newCountCommand)
}

// newCountCommand counts records the way a benchmark run does, to check and time the
// counters on log files.
func newCountCommand() *cobra.Command {
	var format, tag string
	cmd := &cobra.Command{
		Use:    "count --format FORMAT --tag TAG FILE...",
		Short:  "Count the log records containing a tag, as a benchmark run counts them",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			f, err := records.ParseFormat(format)
			if err != nil {
				return err
			}
			var total int64
			for _, name := range files {
				n, err := countFile(f, tag, name)
				if err != nil {
					return err
				}
				total += n
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), total)
			return err
		},
	}
	cmd.Flags().StringVar(&format, "format", "csvlog", "log format: stderr, csvlog, jsonlog or containerlog")
	cmd.Flags().StringVar(&tag, "tag", "", "text that marks the records to count (empty: every record)")
	return cmd
}

// countFile counts one file with a counter of its own, so that a record cannot run on
// from one file into the next.
func countFile(f records.Format, tag, name string) (int64, error) {
	file, err := os.Open(name)
	if err != nil {
		return 0, err
	}
	counter := records.NewCounter(f, tag)
	_, err = io.CopyBuffer(counter, file, make([]byte, 1<<20))
	if err != nil {
		err = fmt.Errorf("reading %s: %w", name, err)
	}
	return counter.Count(), errors.Join(err, file.Close())
}
