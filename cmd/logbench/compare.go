package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/logbench/logbench/internal/report"
)

func init() {
	subcommands = append(subcommands, newCompareCommand)
}

func newCompareCommand() *cobra.Command {
	output := string(report.FormatTable)
	cmd := &cobra.Command{
		Use:   "compare BEFORE AFTER",
		Short: "Compare the results of two LoggingBenchmarks row by row, as benchstat compares two runs",
		Long: `Compare reads two LoggingBenchmarks with their results from YAML or JSON files (saved by
"logbench run --local --save FILE" or by "kubectl get lbench NAME -o yaml") and sets each
destination and client count of AFTER beside the same row of BEFORE: the change of TPS,
with the p-value of a Mann-Whitney U test on the repeats' TPS, and the change of
overhead, with both intervals. A change that the repeats cannot tell from noise is
marked ~, as benchstat marks it. Typical use: the same benchmark before and after a
logging change.`,
		Example: `  logbench compare before.yaml after.yaml
  logbench compare before.yaml after.yaml -o markdown`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(args[0], args[1], output, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", output, "format: table, markdown or json")
	return cmd
}

func runCompare(beforePath, afterPath, output string, stdout io.Writer) error {
	format, err := report.ParseRowsFormat(output)
	if err != nil {
		return err
	}
	before, err := report.ReadFile(beforePath, "")
	if err != nil {
		return err
	}
	after, err := report.ReadFile(afterPath, "")
	if err != nil {
		return err
	}
	if len(before.Status.Results) == 0 || len(after.Status.Results) == 0 {
		return fmt.Errorf("%s and %s must both hold results in their status: save them with "+
			"logbench run --local --save or kubectl get lbench NAME -o yaml once they ran", beforePath, afterPath)
	}
	return report.RenderComparison(stdout, format, before.Status.Results, after.Status.Results)
}
