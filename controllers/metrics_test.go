package controllers

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"maps"

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

// TestReceiverCostIsExportedApartFromTheShipper: a forwarding Syslog row exports its
// receiver's cost beside the sidecar's; a row without a receiver exports none.
func TestReceiverCostIsExportedApartFromTheShipper(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "receiver"},
		Status: v1alpha1.LoggingBenchmarkStatus{Results: []v1alpha1.Result{{
			Destination: "udp", Type: v1alpha1.DestinationSyslog, Clients: 2,
			ShipperCPUCores: new(0.25), ReceiverCPUCores: new(0.07), ReceiverCPUMsPer1kRecords: new(8.5),
			ReceiverPeakMemoryBytes: new(int64(14 << 20)),
		}, {Destination: "local", Type: v1alpha1.DestinationSyslog, Clients: 2, ShipperCPUCores: new(0.2)}}},
	}
	t.Cleanup(func() { forgetBenchmarkMetrics(benchmark.Namespace, benchmark.Name) })
	exportBenchmarkMetrics(benchmark)
	labels := []string{"metrics-test", "receiver", "udp", "Syslog", "2"}
	for gauge, want := range map[*prometheus.GaugeVec]float64{
		resultShipperCPUCores: 0.25, resultReceiverCPUCores: 0.07, resultReceiverCPUPerRecords: 8.5,
		resultReceiverPeakMemory: 14 << 20,
	} {
		if got := testutil.ToFloat64(gauge.WithLabelValues(labels...)); got != want {
			t.Errorf("%v: %v, want %v", labels, got, want)
		}
	}
	for _, gauge := range []*prometheus.GaugeVec{resultReceiverCPUCores, resultReceiverCPUPerRecords, resultReceiverPeakMemory} {
		if got := testutil.CollectAndCount(gauge); got != 1 {
			t.Errorf("%d series of a receiver gauge, want the forwarding row's alone", got)
		}
	}
}

// TestUnverifiedAndDuplicatesAreExportedApartFromDrops: a row whose records logbench could
// not all see, and that stored duplicates, exports both beside a drop they do not change.
func TestUnverifiedAndDuplicatesAreExportedApartFromDrops(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "outcomes"},
		Status: v1alpha1.LoggingBenchmarkStatus{Results: []v1alpha1.Result{{
			Destination: "stdout", Type: v1alpha1.DestinationStdout, Clients: 2,
			Records: v1alpha1.Records{Expected: 37841, Delivered: 20514, Dropped: new(int64(0)), Unverified: 17327,
				Duplicates: 3},
		}}},
	}
	t.Cleanup(func() { forgetBenchmarkMetrics(benchmark.Namespace, benchmark.Name) })
	exportBenchmarkMetrics(benchmark)
	labels := []string{"metrics-test", "outcomes", "stdout", "Stdout", "2"}
	dropped := testutil.ToFloat64(resultRecordsDropped.WithLabelValues(labels...))
	unverified := testutil.ToFloat64(resultRecordsUnverified.WithLabelValues(labels...))
	duplicates := testutil.ToFloat64(resultRecordsDuplicates.WithLabelValues(labels...))
	if dropped != 0 || unverified != 17327 || duplicates != 3 {
		t.Errorf("dropped %v, unverified %v, duplicates %v; want 0, 17327 and 3", dropped, unverified, duplicates)
	}
	if got := testutil.CollectAndCount(resultRecordsDuplicatesExact); got != 0 {
		t.Errorf("%d duplicates-exact series for a row not counted by stage, want none", got)
	}

	// Counted by stage: whether the duplicates are exact is exported beside them.
	for _, exact := range []bool{true, false} {
		benchmark.Status.Results[0].Records.Stages = &v1alpha1.RecordStages{Duplicates: 3, DuplicatesExact: exact}
		exportBenchmarkMetrics(benchmark)
		want := map[bool]float64{true: 1, false: 0}[exact]
		if got := testutil.ToFloat64(resultRecordsDuplicatesExact.WithLabelValues(labels...)); got != want {
			t.Errorf("duplicates exact %v exported as %v, want %v", exact, got, want)
		}
	}
}

// TestEveryMetricIsDocumented: each metric the operator registers is in
// docs/prometheus.md, by its name or, in a row naming several, by its suffix ("..._x").
func TestEveryMetricIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/prometheus.md")
	if err != nil {
		t.Fatal(err)
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, collector := range operatorCollectors() {
		descriptions := make(chan *prometheus.Desc, 1)
		go func() { collector.Describe(descriptions); close(descriptions) }()
		for description := range descriptions {
			name := fqName.FindStringSubmatch(description.String())[1]
			documented := strings.Contains(string(doc), "`"+name+"`")
			for i, char := range name {
				documented = documented || char == '_' && strings.Contains(string(doc), "`..."+name[i:]+"`")
			}
			if !documented {
				t.Errorf("metric %s is not in docs/prometheus.md", name)
			}
		}
	}
}

// TestDestinationInfoNamesEffectiveSettings: every destination, the baseline included,
// has an info series whose logging label is its effective settings, gone with the
// benchmark.
func TestDestinationInfoNamesEffectiveSettings(t *testing.T) {
	on := true
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "metrics-test", Name: "matrix"},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Logging:  v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll},
			Baseline: v1alpha1.BaselineSpec{Enabled: true},
			Destinations: []v1alpha1.Destination{
				{Name: "statement", Type: v1alpha1.DestinationCSVLog},
				{Name: "both", Type: v1alpha1.DestinationCSVLog, Logging: &v1alpha1.LoggingOverride{Duration: &on}},
			},
		},
	}
	exportBenchmarkMetrics(benchmark)
	for destination, settings := range map[string]string{
		"baseline": "statement=none", "statement": "statement=all", "both": "statement=all,duration=on",
	} {
		destinationType := "CSVLog"
		if destination == "baseline" {
			destinationType = "None"
		}
		series := destinationInfo.WithLabelValues("metrics-test", "matrix", destination, destinationType, settings)
		if got := testutil.ToFloat64(series); got != 1 {
			t.Errorf("logbench_destination_info of %s with logging %q = %v, want 1", destination, settings, got)
		}
	}
	if got := testutil.CollectAndCount(destinationInfo); got != 3 {
		t.Errorf("%d info series, want one per destination", got)
	}
	forgetBenchmarkMetrics(benchmark.Namespace, benchmark.Name)
	if got := testutil.CollectAndCount(destinationInfo); got != 0 {
		t.Errorf("%d info series after the benchmark went, want none", got)
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
