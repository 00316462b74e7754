package promql

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
)

// dashboardFile is the Grafana dashboard the Helm chart ships.
const dashboardFile = "../../charts/logbench/dashboards/logbench.json"

// grafanaVariables are the template variables the dashboard uses, with values of the
// kind Grafana substitutes before it sends a query.
var grafanaVariables = strings.NewReplacer(
	"$namespace", "logbench-e2e",
	"$benchmark", "e2e",
	"$__range", "1h",
)

// labelValues is a Grafana variable query: label_values(<series selector>, <label>).
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

type dashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// TestPanelQueriesParse parses every panel query, its variables substituted as Grafana
// would, and checks that it reads logbench's series only and gives an instant vector,
// which the panels draw.
func TestPanelQueriesParse(t *testing.T) {
	promql := parser.NewParser(parser.Options{})
	queries := 0
	for _, panel := range readDashboard(t).Panels {
		for _, target := range panel.Targets {
			queries++
			query := grafanaVariables.Replace(target.Expr)
			expr, err := promql.ParseExpr(query)
			if err != nil {
				t.Errorf("panel %q: %s does not parse: %v", panel.Title, query, err)
				continue
			}
			if expr.Type() != parser.ValueTypeVector {
				t.Errorf("panel %q: %s gives a %s, not an instant vector", panel.Title, query, expr.Type())
			}
			selectors := 0
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				if selector, ok := node.(*parser.VectorSelector); ok {
					selectors++
					if !strings.HasPrefix(selector.Name, "logbench_") {
						t.Errorf("panel %q: %s reads %q, not a logbench series", panel.Title, query, selector.Name)
					}
				}
				return nil
			})
			if selectors == 0 {
				t.Errorf("panel %q: %s selects no series", panel.Title, query)
			}
		}
	}
	if queries == 0 {
		t.Fatalf("%s has no panel query", dashboardFile)
	}
}

// TestVariableQueriesParse checks the series selector of every label_values variable.
func TestVariableQueriesParse(t *testing.T) {
	promql := parser.NewParser(parser.Options{})
	for _, variable := range readDashboard(t).Templating.List {
		if variable.Type != "query" {
			continue
		}
		query, _ := variable.Query.(map[string]any)["query"].(string)
		match := labelValues.FindStringSubmatch(query)
		if match == nil {
			t.Errorf("variable %s: %q is not label_values(<selector>, <label>)", variable.Name, query)
			continue
		}
		if _, err := promql.ParseMetricSelector(grafanaVariables.Replace(match[1])); err != nil {
			t.Errorf("variable %s: selector %s does not parse: %v", variable.Name, match[1], err)
		}
	}
}

// costSeries are the cost figures of a benchmark with a shipper sidecar ("fluent") and a
// forwarding Syslog destination ("udp"), whose receiver's pod is measured too.
const costSeries = `
load 1m
	logbench_result_shipper_cpu_ms_per_1k_records{namespace="logbench-e2e", benchmark="e2e", destination="fluent", type="FluentBitSidecar", clients="2"} 35
	logbench_result_shipper_cpu_ms_per_1k_records{namespace="logbench-e2e", benchmark="e2e", destination="udp", type="Syslog", clients="2"} 30
	logbench_result_receiver_cpu_ms_per_1k_records{namespace="logbench-e2e", benchmark="e2e", destination="udp", type="Syslog", clients="2"} 8
	logbench_result_shipper_peak_memory_bytes{namespace="logbench-e2e", benchmark="e2e", destination="fluent", type="FluentBitSidecar", clients="2"} 16000000
	logbench_result_shipper_peak_memory_bytes{namespace="logbench-e2e", benchmark="e2e", destination="udp", type="Syslog", clients="2"} 15000000
	logbench_result_receiver_peak_memory_bytes{namespace="logbench-e2e", benchmark="e2e", destination="udp", type="Syslog", clients="2"} 14000000
`

// TestCostPanelsShowTheReceiverBesideTheSidecar evaluates the shipper cost panels over
// costSeries: a forwarding Syslog destination's receiver is a bar of its own,
// "<destination> receiver", beside the sidecars.
func TestCostPanelsShowTheReceiverBesideTheSidecar(t *testing.T) {
	evaluate := evaluator(t, costSeries)
	want := []string{
		`{clients="2", destination="fluent"}`, `{clients="2", destination="udp receiver"}`, `{clients="2", destination="udp"}`,
	}
	panels := 0
	for _, panel := range readDashboard(t).Panels {
		if !strings.Contains(panel.Title, "receiver") {
			continue
		}
		panels++
		for _, target := range panel.Targets {
			got, err := evaluate(grafanaVariables.Replace(target.Expr))
			if err != nil {
				t.Fatalf("panel %q: %v", panel.Title, err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("panel %q gives %v, want %v", panel.Title, got, want)
			}
		}
	}
	if panels != 2 {
		t.Errorf("%d panels show the syslog receiver, want its CPU and its memory", panels)
	}
}
