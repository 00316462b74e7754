//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/testenv"
)

// The Prometheus that hack/install-prometheus-stack.sh sets up as kube-prometheus-stack
// does, and the chart's Grafana dashboard.
const (
	prometheusNamespace = "monitoring"
	// prometheus-operated is the governing Service the operator gives every Prometheus.
	prometheusService = "prometheus-operated"
	dashboardFile     = "../../charts/logbench/dashboards/logbench.json"
	// metricsService is the chart's Service that its ServiceMonitor selects.
	metricsService = "logbench-metrics"
)

// prometheusSample is one series of an instant query's answer.
type prometheusSample struct {
	Labels map[string]string
	Value  float64
}

// prometheusGet calls Prometheus's HTTP API through the API server's service proxy and
// decodes the data of its answer into data.
func prometheusGet(ctx context.Context, path string, params map[string]string, data any) error {
	body, err := clientset.CoreV1().Services(prometheusNamespace).
		ProxyGet("http", prometheusService, "9090", path, params).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w: %s", path, err, body)
	}
	var answer struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if answer.Status != "success" {
		return fmt.Errorf("%s: %s", path, answer.Error)
	}
	return json.Unmarshal(answer.Data, data)
}

// prometheusQuery runs an instant PromQL query whose answer is a vector.
func prometheusQuery(ctx context.Context, query string) ([]prometheusSample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := prometheusGet(ctx, "/api/v1/query", map[string]string{"query": query}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("%s gives a %s, not a vector", query, data.ResultType)
	}
	samples := make([]prometheusSample, 0, len(data.Result))
	for _, series := range data.Result {
		text, _ := series.Value[1].(string)
		value, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value %v: %w", query, series.Value[1], err)
		}
		samples = append(samples, prometheusSample{Labels: series.Metric, Value: value})
	}
	return samples, nil
}

// firingAlerts returns the labels of the alerts called name that Prometheus fires.
func firingAlerts(ctx context.Context, name string) ([]map[string]string, error) {
	var data struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := prometheusGet(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return nil, err
	}
	var firing []map[string]string
	for _, alert := range data.Alerts {
		if alert.Labels["alertname"] == name && alert.State == "firing" {
			firing = append(firing, alert.Labels)
		}
	}
	return firing, nil
}

// rowKey names a result row in status and in series labels alike.
func rowKey(destination, clients string) string { return destination + "/" + clients }

// expectResultsInPrometheus checks that Prometheus scraped, through the chart's
// ServiceMonitor, every result row of benchmark with the status's figures, under the
// benchmark's own namespace label.
func expectResultsInPrometheus(ctx context.Context, g Gomega, benchmark *benchv1alpha1.LoggingBenchmark) {
	selector := fmt.Sprintf(`namespace=%q, benchmark=%q`, benchmark.Namespace, benchmark.Name)
	optional := func(count *int64) *float64 {
		if count == nil {
			return nil
		}
		return new(float64(*count))
	}
	stage := func(counted func(*benchv1alpha1.RecordStages) *int64) func(benchv1alpha1.Result) *float64 {
		return func(row benchv1alpha1.Result) *float64 {
			if row.Records.Stages == nil {
				return nil
			}
			return optional(counted(row.Records.Stages))
		}
	}
	// Each metric's selector, where %s stands for the benchmark's labels.
	figures := map[string]func(benchv1alpha1.Result) *float64{
		"logbench_result_tps{%s}": func(row benchv1alpha1.Result) *float64 { return &row.TPS },
		"logbench_result_records_expected{%s}": func(row benchv1alpha1.Result) *float64 {
			return new(float64(row.Records.Expected))
		},
		"logbench_result_records_delivered{%s}": func(row benchv1alpha1.Result) *float64 {
			return new(float64(row.Records.Delivered))
		},
		"logbench_result_records_dropped{%s}": func(row benchv1alpha1.Result) *float64 {
			return optional(row.Records.Dropped)
		},
		`logbench_result_records_at_stage{stage="written", %s}`: stage(func(s *benchv1alpha1.RecordStages) *int64 {
			return s.Written
		}),
		`logbench_result_records_at_stage{stage="stored", %s}`: stage(func(s *benchv1alpha1.RecordStages) *int64 {
			return s.Stored
		}),
	}
	for query, figure := range figures {
		metric := fmt.Sprintf(query, selector)
		samples, err := prometheusQuery(ctx, metric)
		g.Expect(err).NotTo(HaveOccurred())
		scraped := map[string]float64{}
		for _, sample := range samples {
			g.Expect(sample.Labels).To(HaveKeyWithValue("service", metricsService),
				"%s: scraped through the chart's ServiceMonitor", metric)
			scraped[rowKey(sample.Labels["destination"], sample.Labels["clients"])] = sample.Value
		}
		want := map[string]float64{}
		for _, row := range benchmark.Status.Results {
			if value := figure(row); value != nil {
				want[rowKey(row.Destination, fmt.Sprint(row.Clients))] = *value
			}
		}
		g.Expect(scraped).To(HaveLen(len(want)), "%s: one series per result row that has the figure", metric)
		for key, value := range want {
			g.Expect(scraped).To(HaveKeyWithValue(key, BeNumerically("~", value, 1e-9)), "%s of %s", metric, key)
		}
	}
}

// dashboardPanel is a panel of the chart's Grafana dashboard and its queries.
type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// dashboardPanels reads the panels of the chart's Grafana dashboard.
func dashboardPanels(g Gomega) []dashboardPanel {
	content, err := os.ReadFile(dashboardFile)
	g.Expect(err).NotTo(HaveOccurred())
	var dashboard struct {
		Panels []dashboardPanel `json:"panels"`
	}
	g.Expect(json.Unmarshal(content, &dashboard)).To(Succeed())
	return dashboard.Panels
}

// panelQueries returns a panel's queries with the dashboard's variables substituted as
// Grafana would for benchmark.
func panelQueries(panel dashboardPanel, benchmark *benchv1alpha1.LoggingBenchmark) []string {
	variables := strings.NewReplacer("$namespace", benchmark.Namespace, "$benchmark", benchmark.Name, "$__range", "1h")
	queries := make([]string, 0, len(panel.Targets))
	for _, target := range panel.Targets {
		queries = append(queries, variables.Replace(target.Expr))
	}
	return queries
}

// expectDashboardPanelsAnswer runs every panel query of the chart's Grafana dashboard
// for benchmark and checks that each gives at least one series.
func expectDashboardPanelsAnswer(ctx context.Context, g Gomega, benchmark *benchv1alpha1.LoggingBenchmark) {
	queries := 0
	for _, panel := range dashboardPanels(g) {
		for _, query := range panelQueries(panel, benchmark) {
			queries++
			samples, err := prometheusQuery(ctx, query)
			g.Expect(err).NotTo(HaveOccurred(), "panel %q", panel.Title)
			g.Expect(samples).NotTo(BeEmpty(), "panel %q: %s gives no series", panel.Title, query)
		}
	}
	g.Expect(queries).To(BeNumerically(">", 0), "%s has no panel query", dashboardFile)
}

// expectReceiversInDashboard runs the dashboard's panels of the syslog receiver's cost
// for benchmark: each forwarding Syslog row is there twice, as its destination (the
// sidecar) and as "<destination> receiver".
func expectReceiversInDashboard(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark, rows []benchv1alpha1.Result) {
	_, err := clientset.CoreV1().Services(prometheusNamespace).Get(ctx, prometheusService, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		testenv.Missing(GinkgoTB(), "the dashboard's receiver panels are checked in the Prometheus of the local "+
			"cluster's stack (make e2e-up), which this cluster lacks")
	}
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		panels := 0
		for _, panel := range dashboardPanels(g) {
			if !strings.Contains(panel.Title, "receiver") {
				continue
			}
			panels++
			for _, query := range panelQueries(panel, benchmark) {
				samples, err := prometheusQuery(ctx, query)
				g.Expect(err).NotTo(HaveOccurred(), "panel %q", panel.Title)
				series := map[string]bool{}
				for _, sample := range samples {
					series[rowKey(sample.Labels["destination"], sample.Labels["clients"])] = true
				}
				for _, row := range rows {
					for _, bar := range []string{row.Destination, row.Destination + " receiver"} {
						g.Expect(series).To(HaveKey(rowKey(bar, fmt.Sprint(row.Clients))), "panel %q: %s", panel.Title, query)
					}
				}
			}
		}
		g.Expect(panels).To(Equal(2), "the dashboard's panels of the receiver's CPU and memory")
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
}

// expectDroppedRecordsAlerts checks that the chart's LogbenchRecordsDropped alert fires
// for exactly the result rows of benchmark that lost records.
func expectDroppedRecordsAlerts(ctx context.Context, g Gomega, benchmark *benchv1alpha1.LoggingBenchmark) {
	alerts, err := firingAlerts(ctx, "LogbenchRecordsDropped")
	g.Expect(err).NotTo(HaveOccurred())
	var firing, lossy []string
	for _, labels := range alerts {
		if labels["namespace"] == benchmark.Namespace && labels["benchmark"] == benchmark.Name {
			firing = append(firing, rowKey(labels["destination"], labels["clients"]))
		}
	}
	for _, row := range benchmark.Status.Results {
		dropped, droppedAtLeast := row.Records.Dropped, row.Records.DroppedAtLeast
		if (dropped != nil && *dropped > 0) || (droppedAtLeast != nil && *droppedAtLeast > 0) {
			lossy = append(lossy, rowKey(row.Destination, fmt.Sprint(row.Clients)))
		}
	}
	g.Expect(lossy).NotTo(BeEmpty(), "the benchmark lost no record to alert on")
	g.Expect(firing).To(ConsistOf(lossy), "LogbenchRecordsDropped fires for the rows that lost records")
}
