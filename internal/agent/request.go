// Package agent runs one benchmark execution inside the cluster: it applies the
// destination's logging settings, runs pgbench with the run's tag, counts the delivered
// records and returns a v1alpha1.RepeatResult, which the runner (internal/runner)
// records.
package agent

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/logbench/logbench/api/v1alpha1"
)

// RunnerEnv is the environment variable holding a runner's JSON Request template: the
// request of every run of its destination but Clients and Repeat, which each run the
// benchmark assigns sets (Request.For). Connection settings come separately, as libpq's
// PGHOST, PGPORT, PGUSER, PGPASSWORD and PGDATABASE, the password from CloudNativePG's
// superuser Secret: never in the request.
const RunnerEnv = "LOGBENCH_RUNNER"

// Request is what the operator asks of the agent: one pgbench execution.
type Request struct {
	// Benchmark is the LoggingBenchmark's name.
	Benchmark string `json:"benchmark"`
	// BenchmarkUID is the benchmark's UID in a runner's template: a runner of a deleted
	// benchmark takes no run of a new one of the same name. Empty in the templates of
	// runners an older operator made, which take the benchmark of that name.
	BenchmarkUID types.UID `json:"benchmarkUID,omitempty"`
	// Namespace of the benchmark and of the cluster.
	Namespace string `json:"namespace"`
	// ClusterName is the CloudNativePG cluster serving the destination.
	ClusterName string `json:"clusterName"`
	// Destination measured.
	Destination v1alpha1.Destination `json:"destination"`
	// Logging is spec.logging: the destination's own logging goes over it, and the baseline
	// logs nothing (v1alpha1.LoggingSpec.For).
	Logging v1alpha1.LoggingSpec `json:"logging"`
	// Workload of the benchmark; its Clients list is ignored in favour of Clients.
	Workload v1alpha1.WorkloadSpec `json:"workload"`
	// Clients of this execution; none in a runner's template.
	Clients int32 `json:"clients,omitempty"`
	// Repeat of this execution, from 1; none in a runner's template.
	Repeat int32 `json:"repeat,omitempty"`
	// DrainTimeout bounds the wait for the last record.
	DrainTimeout metav1.Duration `json:"drainTimeout"`
	// Counter is spec.postgres.counter: the server preloads logbench_counter, and the
	// run's expected records are its count. Nil: they are predicted.
	Counter *v1alpha1.CounterSpec `json:"counter,omitempty"`
}

// Encode returns the request as the value of RunnerEnv.
func (r Request) Encode() (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}

// For returns the request of the run of the template's destination at clients and
// repeat.
func (r Request) For(clients, repeat int32) Request {
	r.Clients, r.Repeat = clients, repeat
	return r
}

// DecodeTemplate parses the value of RunnerEnv.
func DecodeTemplate(s string) (Request, error) {
	var r Request
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("decoding %s: %w", RunnerEnv, err)
	}
	if r.Benchmark == "" || r.Namespace == "" || r.Destination.Name == "" {
		return r, fmt.Errorf("%s: benchmark, namespace and destination are required", RunnerEnv)
	}
	return r, nil
}
