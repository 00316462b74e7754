package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/report"
	"github.com/logbench/logbench/internal/results"
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
	kubeconfig string
	context    string
	namespace  string
	against    string
}

func newReportCommand() *cobra.Command {
	opts := reportOptions{output: string(report.FormatTable)}
	cmd := &cobra.Command{
		Use:   "report (NAME | -f FILE [NAME])",
		Short: "Show the results of a LoggingBenchmark as a table, Markdown or an HTML page with charts",
		Long: `Report reads a LoggingBenchmark with its results, either from the cluster of the
current kubeconfig context (NAME, with -n for the namespace: the benchmark and its runs'
LoggingBenchmarkRuns) or from a YAML or JSON file (-f: the output of
"logbench run --local --save FILE", or of "kubectl get lbench,lbrun -o yaml", with
the NAME of the benchmark when the list holds several), and renders it:

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
	flags.StringVar(&opts.kubeconfig, "kubeconfig", "",
		"path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	flags.StringVar(&opts.context, "context", "", "kubeconfig context to use (default: the current context)")
	flags.StringVarP(&opts.namespace, "namespace", "n", "",
		"namespace of the LoggingBenchmark (default: the context's namespace)")
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
		benchmark, err = getBenchmark(ctx, opts, args[0])
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

// getBenchmark reads the benchmark through the kubeconfig, as kubectl would.
func getBenchmark(ctx context.Context, opts reportOptions, name string) (*v1alpha1.LoggingBenchmark, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = opts.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: opts.context}
	overrides.Context.Namespace = opts.namespace
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	restConfig, err := config.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to read %s from (%w); give -f FILE to report from a file", name, err)
	}
	namespace, _, err := config.Namespace()
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	var benchmark v1alpha1.LoggingBenchmark
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &benchmark); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, errors.New("the cluster does not know LoggingBenchmarks: install the logbench CRDs and operator first")
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("LoggingBenchmark %s not found in namespace %s "+
				"(kubectl get lbench -A lists them; -n selects the namespace)", name, namespace)
		}
		return nil, fmt.Errorf("reading LoggingBenchmark %s/%s: %w", namespace, name, err)
	}
	// A status written by an operator that recorded no runs holds their results itself.
	var records v1alpha1.LoggingBenchmarkRunList
	err = c.List(ctx, &records, client.InNamespace(namespace), client.MatchingLabels{builders.LabelBenchmark: name})
	if err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("reading the runs of LoggingBenchmark %s/%s: %w", namespace, name, err)
	}
	benchmark.Status.Results = results.WithRepeats(&benchmark, records.Items)
	return &benchmark, nil
}
