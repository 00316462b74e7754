package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/report"
)

func init() {
	subcommands = append(subcommands, newReportCommand)
}

// kubectlPluginName is the executable name under which kubectl finds this binary as a
// plugin: with a link of that name on PATH, `kubectl logbench report NAME` works.
const kubectlPluginName = "kubectl-logbench"

// displayName is how help texts name the program: "kubectl logbench" when run as the
// kubectl plugin, so that the usage lines can be typed as printed.
func displayName(executable string) string {
	if strings.TrimSuffix(filepath.Base(executable), ".exe") == kubectlPluginName {
		return "kubectl logbench"
	}
	return "logbench"
}

type reportOptions struct {
	file       string
	output     string
	outputFile string
	against    string
	cluster    clusterOptions
}

func newReportCommand() *cobra.Command {
	opts := reportOptions{output: string(report.FormatTable)}
	cmd := &cobra.Command{
		Use:   "report (NAME | -f FILE [NAME])",
		Short: "Show the results of a LoggingBenchmark as a table, Markdown or an HTML page with charts",
		Long: `Report reads a LoggingBenchmark with its results, either from the cluster of the
current kubeconfig context (NAME, with -n for the namespace, or NAMESPACE/NAME: the
benchmark and its runs' LoggingBenchmarkRuns) or from a YAML or JSON file (-f: the
output of "logbench run --local --save FILE", or of "kubectl get lbench,lbrun -o yaml",
with the NAME or NAMESPACE/NAME of the benchmark when the list holds several), and
renders it:

  table      the results table for the terminal (default)
  markdown   the same as Markdown, for issues and READMEs
  html       a self-contained page with SVG charts of throughput, overhead and records;
             it loads nothing from the network

Overheads are measured against the baseline, as the status holds them (a destination
placed otherwise than the workload against the baseline placed as it is); --against NAME
measures them against another destination instead, paired by round in the same way:
what log_duration adds on top of log_statement is the overhead of a destination that
logs both against one that logs statements only.

As a kubectl plugin: put a link or copy of this binary named kubectl-logbench on PATH,
then run "kubectl logbench report NAME".`,
		Example: `  logbench report quick -n benchmarks
  logbench report -f quick-result.yaml -o html --output-file quick.html
  kubectl get lbench,lbrun -n benchmarks -o yaml > saved.yaml && logbench report -f saved.yaml quick
  logbench report -f settings-matrix-result.yaml --against statement
  kubectl logbench report quick -o markdown`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	flags := cmd.Flags()
	flags.StringVarP(&opts.file, "file", "f", "",
		"read the LoggingBenchmark, with its runs' records, from this YAML or JSON file instead of the cluster")
	flags.StringVarP(&opts.output, "output", "o", opts.output, "report format: table, markdown or html")
	flags.StringVar(&opts.outputFile, "output-file", "", "write the report to this file instead of standard output")
	flags.StringVar(&opts.against, "against", "",
		"measure overheads against this destination instead of the baseline, paired by round")
	opts.cluster.addFlags(flags)
	return cmd
}

func runReport(ctx context.Context, opts reportOptions, args []string, stdout io.Writer) error {
	format, err := report.ParseFormat(opts.output)
	if err != nil {
		return err
	}
	var benchmark *v1alpha1.LoggingBenchmark
	switch {
	case opts.file != "":
		name := ""
		if len(args) > 0 {
			name = args[0]
		}
		benchmark, err = report.ReadFile(opts.file, name)
	case len(args) > 0:
		var benchmarks []*v1alpha1.LoggingBenchmark
		if benchmarks, err = opts.cluster.readBenchmarks(ctx, args[0]); err == nil {
			benchmark = benchmarks[0]
		}
	default:
		return errors.New("give the NAME of a LoggingBenchmark in the cluster (kubectl get lbench lists them) or -f FILE")
	}
	if err != nil {
		return err
	}
	if opts.against != "" {
		if err := report.Against(benchmark, opts.against); err != nil {
			return err
		}
	}
	if opts.outputFile == "" {
		return report.Render(stdout, format, benchmark)
	}
	return writeReportFile(opts.outputFile, format, benchmark)
}

// writeReportFile renders into a temporary file beside the target and renames it, so
// that a failed rendering never leaves half a report where a whole one was.
func writeReportFile(path string, format report.Format, benchmark *v1alpha1.LoggingBenchmark) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // fails, as it should, once the rename moved it
	if err := report.Render(tmp, format, benchmark); err != nil {
		_ = tmp.Close() // the rendering's error is the one to report
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
