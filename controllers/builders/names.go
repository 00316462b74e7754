// Package builders builds the objects the operator creates for a LoggingBenchmark, one
// pure function per kind, from the benchmark, a planned run and names; the reconciler
// creates them and sets their owners. It also names them and labels them.
package builders

import (
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/shipping"
)

// Labels and annotations logbench puts on the objects it creates.
const (
	LabelBenchmark   = "bench.logbench.io/benchmark"
	LabelDestination = "bench.logbench.io/destination"
	LabelClients     = "bench.logbench.io/clients"
	LabelRepeat      = "bench.logbench.io/repeat"
	// LabelComponent names what a pod that is neither an instance nor a run does.
	LabelComponent          = "bench.logbench.io/component"
	componentSyslogReceiver = "syslog-receiver"
	componentRunner         = "runner"
	// LabelCluster names the CloudNativePG cluster of a benchmark on every object
	// CloudNativePG creates for it, the instance pods among them (the Cluster's
	// spec.inheritedMetadata): logbench's NetworkPolicies select the pods that carry it,
	// never those of a cluster it did not create. It is not LabelBenchmark, which would
	// put CloudNativePG's own Jobs among the benchmark's runs.
	LabelCluster = "bench.logbench.io/cluster"

	// AnnotationResult held a finished Job's JSON v1alpha1.RepeatResult where an operator
	// that wrote no LoggingBenchmarkRuns saved it: read to record the runs of a benchmark
	// such an operator began.
	AnnotationResult = "bench.logbench.io/result"

	// AnnotationDestinationFailed marks the LoggingBenchmarkRun of a run that failed with
	// its destination and never reached a runner: the destination's failure is read back
	// from it when the status that said so was not written.
	AnnotationDestinationFailed = "bench.logbench.io/destination-failed"
)

// maxObjectNameLength is what Kubernetes allows the name of an object.
const maxObjectNameLength = 253

// Run is one pgbench execution of a benchmark.
type Run struct {
	Destination v1alpha1.Destination
	Clients     int32
	Repeat      int32
}

// Key identifies the run among the benchmark's results.
func (r Run) Key() results.RunKey {
	return results.RunKey{Destination: r.Destination.Name, Clients: r.Clients, Repeat: r.Repeat}
}

// ClusterName names the CloudNativePG cluster of a benchmark's destination.
func ClusterName(benchmark, destination string) string {
	return benchmark + "-" + destination
}

// ClusterNetworkPolicyName names the NetworkPolicy of a destination's instance pods.
func ClusterNetworkPolicyName(cluster string) string {
	return cluster + "-logbench"
}

// ShipperConfigMapName is the ConfigMap holding the shipper configuration of a shipping
// destination's cluster; the cluster's pod patch mounts it.
func ShipperConfigMapName(cluster string) string {
	return cluster + "-shipper"
}

// ShippingTarget is what the shipping package needs to know of a destination.
func ShippingTarget(benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination) shipping.Target {
	return shipping.Target{
		Namespace: benchmark.Namespace, Benchmark: benchmark.Name, Destination: dest,
		Cluster: ClusterName(benchmark.Name, dest.Name),
	}
}

// SyslogReceiverName names the receiver of a forwarding Syslog destination: its
// Deployment, Service, ConfigMap and NetworkPolicy.
func SyslogReceiverName(benchmark, destination string) string {
	return shipping.SyslogReceiverName(ClusterName(benchmark, destination))
}

// SyslogReceiverLabels select the pods of a forwarding Syslog destination's receiver,
// apart from its runner's pod.
func SyslogReceiverLabels(benchmark, destination string) map[string]string {
	labels := DestinationLabels(benchmark, destination)
	labels[LabelComponent] = componentSyslogReceiver
	return labels
}

// RunnerName names the Deployment of the runner of a benchmark's destination.
func RunnerName(benchmark, destination string) string {
	return ClusterName(benchmark, destination) + "-runner"
}

// RunnerLabels select the pod of a destination's runner, apart from its syslog
// receiver's.
func RunnerLabels(benchmark, destination string) map[string]string {
	labels := BenchmarkRunnerLabels(benchmark)
	labels[LabelDestination] = destination
	return labels
}

// BenchmarkRunnerLabels select the runners of every destination of a benchmark.
func BenchmarkRunnerLabels(benchmark string) map[string]string {
	labels := BenchmarkLabels(benchmark)
	labels[LabelComponent] = componentRunner
	return labels
}

// ValidateClusterNames reports the first destination whose cluster name CloudNativePG
// would reject.
func ValidateClusterNames(benchmark string, spec *v1alpha1.LoggingBenchmarkSpec) error {
	for _, dest := range spec.EffectiveDestinations() {
		if name := ClusterName(benchmark, dest.Name); len(name) > cloudnativepg.MaxClusterNameLength {
			return fmt.Errorf("cluster name %q is %d characters long but CloudNativePG allows %d: "+
				"shorten the benchmark name to at most %d characters",
				name, len(name), cloudnativepg.MaxClusterNameLength, cloudnativepg.MaxClusterNameLength-len(dest.Name)-1)
		}
	}
	return nil
}

// RunRecordName names the LoggingBenchmarkRun of a run, deterministically, so that no
// run is ever recorded twice, whoever records it (its runner, or the operator for a run
// that could not run) and however often they restart; it is the name an older operator
// gave the run's Job when that fits an object's name.
func RunRecordName(benchmark string, run results.RunKey) string {
	return runObjectName(benchmark, run, maxObjectNameLength)
}

// runObjectName is <benchmark>-<destination>-c<clients>-r<repeat>; a name longer than
// limit keeps a readable prefix and ends with a hash of the full name.
func runObjectName(benchmark string, run results.RunKey, limit int) string {
	name := fmt.Sprintf("%s-%s-c%d-r%d", benchmark, run.Destination, run.Clients, run.Repeat)
	if len(name) <= limit {
		return name
	}
	hash := fnv.New32a()
	_, _ = hash.Write([]byte(name))
	suffix := fmt.Sprintf("-%08x", hash.Sum32())
	return name[:limit-len(suffix)] + suffix
}

// BenchmarkLabels are on every object of a benchmark.
func BenchmarkLabels(benchmark string) map[string]string {
	return map[string]string{LabelBenchmark: benchmark}
}

// DestinationLabels are on every object of a benchmark's destination.
func DestinationLabels(benchmark, destination string) map[string]string {
	labels := BenchmarkLabels(benchmark)
	labels[LabelDestination] = destination
	return labels
}

// RunKeyLabels are the labels of a run: on its LoggingBenchmarkRun, and on the Job and
// pod an older operator ran it in; RunKeyFromLabels reads them back.
func RunKeyLabels(benchmark string, run results.RunKey) map[string]string {
	labels := DestinationLabels(benchmark, run.Destination)
	labels[LabelClients] = strconv.Itoa(int(run.Clients))
	labels[LabelRepeat] = strconv.Itoa(int(run.Repeat))
	return labels
}

// RunKeyFromLabels identifies the run of a LoggingBenchmarkRun or a Job from its labels.
func RunKeyFromLabels(labels map[string]string) (results.RunKey, error) {
	clients, errClients := strconv.ParseInt(labels[LabelClients], 10, 32)
	repeat, errRepeat := strconv.ParseInt(labels[LabelRepeat], 10, 32)
	if labels[LabelDestination] == "" || errClients != nil || errRepeat != nil {
		return results.RunKey{}, fmt.Errorf(
			"labels %s, %s and %s must name the run",
			LabelDestination,
			LabelClients,
			LabelRepeat,
		)
	}
	return results.RunKey{Destination: labels[LabelDestination], Clients: int32(clients), Repeat: int32(repeat)}, nil
}
