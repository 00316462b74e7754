package runner

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/testenv/controlplane"
)

// TestRunnerOnAnAPIServer runs the runner against a real API server, which must take its
// watch's field selector, whose status is a subresource and whose admission checks the
// records the runner creates.
func TestRunnerOnAnAPIServer(t *testing.T) {
	environment, err := controlplane.NewWithoutCloudNativePG()
	if err != nil {
		testenv.Missing(t, "the runner's test on an API server: %v", err)
	}
	c, err := client.NewWithWatch(controlplane.Start(t, environment), client.Options{Scheme: newScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	own := benchmarkOnAPIServer("b")
	objects := append([]client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}},
		// Another benchmark of the namespace, which the runner's watch leaves out.
		benchmarkOnAPIServer("other"),
		own,
	}, runnerPods()...)
	for _, object := range objects {
		if err := c.Create(ctx, object); err != nil {
			t.Fatal(err)
		}
	}
	// The API server gives the benchmark its UID, which the operator puts in the template.
	h := startOn(t, c, succeeding, func(runner *Runner) { runner.Template.BenchmarkUID = own.UID })
	assign := func(name, run string) {
		benchmark := &v1alpha1.LoggingBenchmark{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, benchmark); err != nil {
			t.Fatal(err)
		}
		benchmark.Status.Phase, benchmark.Status.Progress.Current = v1alpha1.PhaseRunning, run
		if err := c.Status().Update(ctx, benchmark); err != nil {
			t.Fatal(err)
		}
	}

	assign("b", "csv/2/1")
	record := h.record(csvRun)
	if record.Status.TPS != 200 || record.Status.ClientNode != "node-a" || record.Status.ServerNode != "node-b" {
		t.Errorf("recorded %+v", record.Status)
	}
	if owner := metav1.GetControllerOf(record); owner == nil || owner.Name != "b" {
		t.Errorf("record's controller %+v", owner)
	}

	assign("other", "csv/4/1")
	never(t, "the runner ran the other benchmark's run", func() bool { return h.runs.count() > 1 })
	assign("b", "csv/4/1")
	h.record(results.RunKey{Destination: "csv", Clients: 4, Repeat: 1})
}

func benchmarkOnAPIServer(name string) *v1alpha1.LoggingBenchmark {
	return &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
			Workload:     v1alpha1.WorkloadSpec{Clients: []int32{2, 4}, Duration: metav1.Duration{Duration: 10 * time.Second}},
		},
	}
}
