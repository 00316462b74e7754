package controllers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/logbench/logbench/api/v1alpha1"
)

// dashboardFile is the Grafana dashboard the Helm chart ships.
const dashboardFile = "../charts/logbench/dashboards/logbench.json"

var (
	metricNamePattern = regexp.MustCompile(`logbench_[a-z0-9_]+`)
	// Labels a PromQL query depends on: those its selectors match, those it aggregates
	// by, and those a Grafana label_values variable lists.
	labelPatterns = []*regexp.Regexp{
		regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`),
		regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`),
		regexp.MustCompile(`label_values\([^,]*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)`),
	}
)

// TestDashboardQueriesExportedMetrics checks every query of the chart's Grafana
// dashboard against the registry the operator serves: each metric it names must be
// exported, with every label the query relies on.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	exported := exportEveryMetric(t)
	queries := dashboardQueries(t)
	if len(queries) == 0 {
		t.Fatalf("%s names no logbench metric", dashboardFile)
	}
	for _, query := range queries {
		for _, name := range metricNamePattern.FindAllString(query, -1) {
			labels, ok := exported[name]
			if !ok {
				t.Errorf("the dashboard queries %s, which the operator does not export: %s", name, query)
				continue
			}
			for _, label := range queryLabels(query) {
				if !labels[label] {
					t.Errorf("the dashboard selects label %s of %s, which has none: %s", label, name, query)
				}
			}
		}
	}
}

// exportEveryMetric sets every logbench series for a benchmark with every optional
// figure present, so that each family appears in the registry, and returns the label
// names of each logbench family.
func exportEveryMetric(t *testing.T) map[string]map[string]bool {
	t.Helper()
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "dashboard-test", Name: "every-figure"},
		Status: v1alpha1.LoggingBenchmarkStatus{
			Phase: v1alpha1.PhaseSucceeded,
			Results: []v1alpha1.Result{{
				Destination: "stderr", Type: v1alpha1.DestinationStderr, Clients: 4,
				TPS: 1000, LatencyAvgMs: 4, OverheadPercent: new(5.0), DrainSeconds: 1,
				Records: v1alpha1.Records{Expected: 100, Delivered: 100, Dropped: ptr.To[int64](0),
					Stages: &v1alpha1.RecordStages{ContainerLog: new(int64(100)), Stored: new(int64(100))}},
				LogBytesPerRecord: new(150.0), LogGigabytesPerHour: new(0.5),
				ShipperCPUCores: new(0.2), ShipperCPUMsPer1kRecords: new(35.0), ShipperPeakMemoryBytes: new(int64(16 << 20)),
				ReceiverCPUCores: new(0.05), ReceiverCPUMsPer1kRecords: new(8.0),
				ReceiverPeakMemoryBytes: new(int64(14 << 20)),
			}, {
				Destination: "slow", Type: v1alpha1.DestinationStderr, Clients: 4,
				TPS: 1000, LatencyAvgMs: 4, OverheadPercent: new(5.0), DrainSeconds: 1,
				Records: v1alpha1.Records{
					Expected:           100,
					Delivered:          80,
					ArrivedLate:        5,
					DroppedAtLeast:     ptr.To[int64](15),
					ExpectedIsEstimate: true,
				},
			}},
		},
	}
	exportBenchmarkMetrics(benchmark)
	countRun(benchmark, outcomeSucceeded)
	t.Cleanup(func() { forgetBenchmarkMetrics(benchmark.Namespace, benchmark.Name) })

	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]map[string]bool{}
	for _, family := range families {
		if !strings.HasPrefix(family.GetName(), "logbench_") {
			continue
		}
		labels := map[string]bool{}
		for _, metric := range family.GetMetric() {
			for _, pair := range metric.GetLabel() {
				labels[pair.GetName()] = true
			}
		}
		exported[family.GetName()] = labels
	}
	return exported
}

// dashboardQueries returns every string of the dashboard that names a logbench metric:
// the panels' queries and the variables' alike.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	content, err := os.ReadFile(filepath.FromSlash(dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var model any
	if err := json.Unmarshal(content, &model); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var queries []string
	var walk func(value any)
	walk = func(value any) {
		switch value := value.(type) {
		case string:
			if metricNamePattern.MatchString(value) {
				queries = append(queries, value)
			}
		case []any:
			for _, item := range value {
				walk(item)
			}
		case map[string]any:
			for _, item := range value {
				walk(item)
			}
		}
	}
	walk(model)
	return queries
}

// queryLabels returns the label names a query selects, groups by or lists.
func queryLabels(query string) []string {
	var labels []string
	for _, pattern := range labelPatterns {
		for _, match := range pattern.FindAllStringSubmatch(query, -1) {
			for label := range strings.SplitSeq(match[1], ",") {
				if label = strings.TrimSpace(label); label != "" {
					labels = append(labels, label)
				}
			}
		}
	}
	return labels
}
