package builders

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/golden"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/shipping"
)

// testPullSecrets are the operator's image pull secrets in the tests.
var testPullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}

// goldenBenchmark is a benchmark with a destination of each way to ship: written by the
// server (csv), shipped by a sidecar (loki), forwarded to a receiver (sys).
func goldenBenchmark() *v1alpha1.LoggingBenchmark {
	return &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "bench"},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Postgres: v1alpha1.PostgresSpec{
				ImageName: "ghcr.io/cloudnative-pg/postgresql:18",
				Instances: 1,
				Storage:   v1alpha1.StorageSpec{Size: resource.MustParse("2Gi")},
				Counter:   &v1alpha1.CounterSpec{Source: v1alpha1.CounterInOperandImage},
			},
			Logging: v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll},
			Workload: v1alpha1.WorkloadSpec{
				Duration: metav1.Duration{Duration: time.Minute},
				Warmup:   metav1.Duration{Duration: 10 * time.Second},
				Repeats:  1,
			},
			DrainTimeout: metav1.Duration{Duration: 30 * time.Second},
			Destinations: []v1alpha1.Destination{goldenCSV, goldenLoki, goldenSyslog},
		},
	}
}

var (
	goldenCSV  = v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}
	goldenLoki = v1alpha1.Destination{Name: "loki", Type: v1alpha1.DestinationLoki,
		Loki: &v1alpha1.LokiSpec{URL: "http://loki.monitoring:3100"}}
	goldenSyslog = forwardingDestination(v1alpha1.SyslogUDP)
)

// goldenRunResult is a finished run's result as an agent hands it back.
func goldenRunResult() v1alpha1.RepeatResult {
	logBytes := int64(1234567)
	return v1alpha1.RepeatResult{
		TPS: 1520.5, LatencyAvgMs: 2.63, LatencyStdDevMs: 0.41, Transactions: 91230,
		Records:      v1alpha1.Records{Expected: 182460, Delivered: 182460, ExpectedSource: v1alpha1.ExpectedCounted},
		DrainSeconds: 0.2, DrainEnd: v1alpha1.DrainComplete, LogBytes: &logBytes,
		ClientNode: "node-b", ServerNode: "node-a",
	}
}

// TestGolden: each builder's object, as YAML, is the one in testdata; go test -update
// rewrites the files after an intended change, for review in the diff.
func TestGolden(t *testing.T) {
	benchmark := goldenBenchmark()
	peers := NetworkPeers{
		CloudNativePG:  DefaultCloudNativePGOperator(),
		MetricsScraper: PodPeer{Namespace: "monitoring", Labels: map[string]string{"app": "prometheus"}},
	}
	runner := func(dest v1alpha1.Destination) func() (runtime.Object, error) {
		return func() (runtime.Object, error) {
			return Runner(benchmark, dest, RunnerInput{
				ClusterImage: benchmark.Spec.Postgres.ImageName, InstallerImage: "ghcr.io/logbench/logbench:1.0.0",
				PullSecrets: testPullSecrets,
			})
		}
	}
	object := func(built runtime.Object) func() (runtime.Object, error) {
		return func() (runtime.Object, error) { return built, nil }
	}
	for name, build := range map[string]func() (runtime.Object, error){
		"cluster-csvlog": func() (runtime.Object, error) { return Cluster(benchmark, goldenCSV, "", nil, "") },
		"cluster-loki-metered": func() (runtime.Object, error) {
			return Cluster(benchmark, goldenLoki, "ghcr.io/logbench/logbench:1.0.0", testPullSecrets, "")
		},
		"cluster-syslog-forwarding":     func() (runtime.Object, error) { return Cluster(benchmark, goldenSyslog, "", nil, "") },
		"deployment-runner-csvlog":      runner(goldenCSV),
		"deployment-runner-loki":        runner(goldenLoki),
		"networkpolicy-csvlog":          object(NetworkPolicy(benchmark, goldenCSV, peers)),
		"networkpolicy-loki":            object(NetworkPolicy(benchmark, goldenLoki, peers)),
		"networkpolicy-syslog-receiver": object(SyslogReceiverNetworkPolicy(benchmark, goldenSyslog)),
		"deployment-syslog-receiver":    object(SyslogReceiverDeployment(benchmark, goldenSyslog, "logbench:golden", testPullSecrets)),
		"service-syslog-receiver":       object(SyslogReceiverService(benchmark, goldenSyslog)),
		"configmap-shipper": object(ShipperConfigMap(benchmark, goldenLoki,
			ShipperConfigMapName(ClusterName(benchmark.Name, goldenLoki.Name)), []byte("[SERVICE]\n    flush 1\n"))),
		"serviceaccount-agent": object(AgentServiceAccount(benchmark.Namespace)),
		"rolebinding-agent":    object(AgentRoleBinding(benchmark.Namespace)),
		"rolebinding-runner":   object(RunnerRoleBinding(benchmark.Namespace)),
		"loggingbenchmarkrun-csvlog": object(RunRecord(benchmark, results.RunKey{Destination: goldenCSV.Name, Clients: 4,
			Repeat: 2}, goldenRunResult())),
	} {
		t.Run(name, func(t *testing.T) {
			built, err := build()
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", name+".golden.yaml"), renderYAML(t, built))
		})
	}
}

// renderYAML renders a built object as YAML with its kind, and a Cluster's pod patch,
// which CloudNativePG reads as JSON from an annotation, decoded in a second document.
func renderYAML(t *testing.T, built runtime.Object) []byte {
	t.Helper()
	if built.GetObjectKind().GroupVersionKind().Empty() {
		kinds, _, err := scheme.Scheme.ObjectKinds(built)
		if err != nil {
			t.Fatal(err)
		}
		built.GetObjectKind().SetGroupVersionKind(kinds[0])
	}
	rendered, err := yaml.Marshal(built)
	if err != nil {
		t.Fatal(err)
	}
	cluster, ok := built.(*unstructured.Unstructured)
	if !ok {
		return rendered
	}
	patch, err := yaml.JSONToYAML([]byte(cluster.GetAnnotations()[shipping.PodPatchAnnotation]))
	if err != nil {
		t.Fatal(err)
	}
	return append(append(rendered, "---\n# "+shipping.PodPatchAnnotation+", decoded\n"...), patch...)
}
