package controllers

import (
	"maps"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/version"
)

// TestStagesAreExportedAsCounted: a row's counted stages each get a series, and a stage
// no longer counted loses its series.
func TestStagesAreExportedAsCounted(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "stages"},
		Status: v1alpha1.LoggingBenchmarkStatus{Results: []v1alpha1.Result{{
			Destination: "platform", Type: v1alpha1.DestinationStdout, Clients: 1,
			Records: v1alpha1.Records{Expected: 100, Delivered: 60, Stages: &v1alpha1.RecordStages{
				ContainerLog: new(int64(100)), Stored: new(int64(60)), LostAt: "stored",
			}},
		}}},
	}
	t.Cleanup(func() { forgetBenchmarkMetrics(benchmark.Namespace, benchmark.Name) })
	stage := func(name string) float64 {
		return testutil.ToFloat64(resultRecordsAtStage.WithLabelValues(
			"metrics-test", "stages", "platform", "Stdout", "1", name))
	}

	exportBenchmarkMetrics(benchmark)
	if got := testutil.CollectAndCount(resultRecordsAtStage); got != 2 {
		t.Errorf("%d stage series, want containerLog and stored", got)
	}
	if stage("containerLog") != 100 || stage("stored") != 60 {
		t.Errorf("container log %v, stored %v; want 100 and 60", stage("containerLog"), stage("stored"))
	}

	benchmark.Status.Results[0].Records.Stages.ContainerLog = nil
	exportBenchmarkMetrics(benchmark)
	if got := testutil.CollectAndCount(resultRecordsAtStage); got != 1 {
		t.Errorf("%d stage series after the container log stopped being counted, want stored alone", got)
	}
}

// TestBuildInfo: the operator's registry exports one logbench_build_info series, 1,
// labelled with the version and commit logbench version prints.
func TestBuildInfo(t *testing.T) {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	build := version.Get()
	for _, family := range families {
		if family.GetName() != "logbench_build_info" {
			continue
		}
		if len(family.GetMetric()) != 1 {
			t.Fatalf("%d logbench_build_info series, want 1", len(family.GetMetric()))
		}
		series := family.GetMetric()[0]
		labels := map[string]string{}
		for _, label := range series.GetLabel() {
			labels[label.GetName()] = label.GetValue()
		}
		want := map[string]string{"version": build.Version, "commit": build.Commit}
		if !maps.Equal(labels, want) || series.GetGauge().GetValue() != 1 {
			t.Errorf("logbench_build_info%v = %v, want %v = 1", labels, series.GetGauge().GetValue(), want)
		}
		return
	}
	t.Error("the operator's registry exports no logbench_build_info")
}
