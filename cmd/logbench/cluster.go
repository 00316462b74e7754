package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/pflag"
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

// clusterOptions say where the commands that read LoggingBenchmarks from a cluster
// (report, compare) find them, as kubectl's flags of the same names do.
type clusterOptions struct {
	kubeconfig string
	context    string
	namespace  string
}

func (o *clusterOptions) addFlags(flags *pflag.FlagSet) {
	flags.StringVar(&o.kubeconfig, "kubeconfig", "",
		"path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	flags.StringVar(&o.context, "context", "", "kubeconfig context to use (default: the current context)")
	flags.StringVarP(&o.namespace, "namespace", "n", "",
		"namespace of the LoggingBenchmarks (default: the context's namespace)")
}

// readBenchmarks reads the benchmarks named names (NAME, in the namespace of -n or the
// context, or NAMESPACE/NAME), with their runs' records, through the kubeconfig, as
// kubectl would.
func (o clusterOptions) readBenchmarks(ctx context.Context, names ...string) ([]*v1alpha1.LoggingBenchmark, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.Context.Namespace = o.namespace
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	restConfig, err := config.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to read LoggingBenchmark %s from (%w); give -f FILE to read a file instead",
			names[0], err)
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
	benchmarks := make([]*v1alpha1.LoggingBenchmark, 0, len(names))
	for _, name := range names {
		benchmark, err := readBenchmark(ctx, c, namespace, name)
		if err != nil {
			return nil, err
		}
		benchmarks = append(benchmarks, benchmark)
	}
	return benchmarks, nil
}

// readBenchmark reads the benchmark named reference, NAME in namespace or
// NAMESPACE/NAME, with the repeats of its rows filled from its runs' records, as kubectl
// logbench report shows it.
func readBenchmark(
	ctx context.Context, c client.Reader, namespace, reference string,
) (*v1alpha1.LoggingBenchmark, error) {
	own, name, err := report.SplitName(reference)
	if err != nil {
		return nil, err
	}
	if own != "" {
		namespace = own
	}
	var benchmark v1alpha1.LoggingBenchmark
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &benchmark); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, errors.New("the cluster does not know LoggingBenchmarks: install the logbench CRDs and operator first")
		}
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("LoggingBenchmark %s not found in namespace %s "+
				"(kubectl get lbench -A lists them; -n or NAMESPACE/NAME selects the namespace)", name, namespace)
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
