package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/report"
)

func init() {
	subcommands = append(subcommands, newCompareCommand)
}

type compareOptions struct {
	files   []string
	output  string
	cluster clusterOptions
}

func newCompareCommand() *cobra.Command {
	opts := compareOptions{output: string(report.FormatTable)}
	cmd := &cobra.Command{
		Use:   "compare (BEFORE AFTER | -f FILE BEFORE AFTER | -f BEFORE_FILE -f AFTER_FILE [BEFORE AFTER])",
		Short: "Compare the results of two LoggingBenchmarks row by row, as benchstat compares two runs",
		Long: `Compare reads two LoggingBenchmarks with their results and sets each destination and
client count of AFTER beside the same row of BEFORE: the change of TPS, with the
p-value of a Mann-Whitney U test on the repeats' TPS, and the change of overhead, with
both intervals. A change that the repeats cannot tell from noise is marked ~, as
benchstat marks it. Typical use: the same benchmark before and after a logging change.

The benchmarks come from the cluster of the current kubeconfig context (BEFORE and
AFTER, with -n for their namespace, or each as NAMESPACE/NAME: each benchmark and its
runs' LoggingBenchmarkRuns), or from YAML or JSON files (-f: the output of
"logbench run --local --save FILE", or of "kubectl get lbench,lbrun -o yaml"): one file
that holds both, named BEFORE and AFTER, or one file each, with their names when a file
holds several (NAMESPACE/NAME tells apart benchmarks of one name that
"kubectl get -A" saved from several namespaces).`,
		Example: `  logbench compare nightly-before nightly-after -n benchmarks
  logbench compare staging/nightly production/nightly
  kubectl get lbench,lbrun -n benchmarks -o yaml > saved.yaml
  logbench compare -f saved.yaml nightly-before nightly-after
  logbench compare -f before.yaml -f after.yaml -o markdown`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompare(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	flags := cmd.Flags()
	flags.StringArrayVarP(&opts.files, "file", "f", nil,
		"read BEFORE and AFTER from this YAML or JSON file instead of the cluster; twice: BEFORE's file, then AFTER's")
	flags.StringVarP(&opts.output, "output", "o", opts.output, "format: table, markdown or json")
	opts.cluster.addFlags(flags)
	return cmd
}

func runCompare(ctx context.Context, opts compareOptions, args []string, stdout io.Writer) error {
	format, err := report.ParseRowsFormat(opts.output)
	if err != nil {
		return err
	}
	compared, err := readCompared(ctx, opts, args)
	if err != nil {
		return err
	}
	for _, side := range compared {
		if len(side.benchmark.Status.Results) == 0 {
			return fmt.Errorf("%s holds no results: compare benchmarks once they ran, from the cluster or "+
				"saved by logbench run --local --save or kubectl get lbench,lbrun -o yaml", side.source)
		}
	}
	return report.RenderComparison(stdout, format, compared[0].benchmark.Status.Results,
		compared[1].benchmark.Status.Results)
}

// comparedBenchmark is one side of a comparison and where it was read, for errors.
type comparedBenchmark struct {
	benchmark *v1alpha1.LoggingBenchmark
	source    string
}

// readCompared reads BEFORE and AFTER from where opts and args say.
func readCompared(ctx context.Context, opts compareOptions, args []string) ([2]comparedBenchmark, error) {
	var compared [2]comparedBenchmark
	switch len(opts.files) {
	case 0:
		if len(args) != 2 {
			return compared, errors.New("give BEFORE and AFTER, two LoggingBenchmarks in the cluster " +
				"(kubectl get lbench lists them), or -f FILE")
		}
		benchmarks, err := opts.cluster.readBenchmarks(ctx, args...)
		if err != nil {
			if isFile(args[0]) && isFile(args[1]) {
				return compared, fmt.Errorf("%s and %s are files: logbench compare -f %s -f %s compares them "+
					"(read as LoggingBenchmarks in the cluster: %w)", args[0], args[1], args[0], args[1], err)
			}
			return compared, err
		}
		for i, benchmark := range benchmarks {
			compared[i] = comparedBenchmark{benchmark, "LoggingBenchmark " + report.QualifiedName(benchmark)}
		}
		return compared, nil
	case 1:
		if len(args) != 2 {
			return compared, fmt.Errorf("give the names of BEFORE and AFTER in %s, or a second -f for AFTER's file",
				opts.files[0])
		}
		return readComparedFiles(opts.files[0], opts.files[0], args)
	case 2:
		if len(args) == 1 {
			return compared, errors.New("give the names of both BEFORE and AFTER in their files, or neither")
		}
		return readComparedFiles(opts.files[0], opts.files[1], args)
	default:
		return compared, fmt.Errorf("-f given %d times: give one file that holds BEFORE and AFTER, "+
			"or BEFORE's file then AFTER's", len(opts.files))
	}
}

// readComparedFiles reads BEFORE from beforePath and AFTER from afterPath, each named
// by names when given, the only benchmark of its file otherwise.
func readComparedFiles(beforePath, afterPath string, names []string) ([2]comparedBenchmark, error) {
	var compared [2]comparedBenchmark
	for i, path := range []string{beforePath, afterPath} {
		name := ""
		if len(names) == 2 {
			name = names[i]
		}
		benchmark, err := report.ReadFile(path, name)
		if err != nil {
			return compared, err
		}
		compared[i] = comparedBenchmark{benchmark, fmt.Sprintf("LoggingBenchmark %s of %s", benchmark.Name, path)}
	}
	return compared, nil
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}
