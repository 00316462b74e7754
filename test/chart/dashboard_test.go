package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// datasourceRef is how a Grafana panel, query or variable names its data source; the
// dashboard's always point at the variable ${datasource}, so that it imports into any
// Grafana whatever its Prometheus data source is called.
type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

var prometheusVariable = datasourceRef{Type: "prometheus", UID: "${datasource}"}

// dashboard holds the parts of a Grafana dashboard model the tests check.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasourceRef  `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int           `json:"id"`
		Title      string        `json:"title"`
		Type       string        `json:"type"`
		Datasource datasourceRef `json:"datasource"`
		Targets    []struct {
			RefID      string        `json:"refId"`
			Expr       string        `json:"expr"`
			Datasource datasourceRef `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

func readDashboard(t *testing.T) ([]byte, dashboard) {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "logbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	var model dashboard
	if err := json.Unmarshal(content, &model); err != nil {
		t.Fatalf("dashboards/logbench.json is not JSON: %v", err)
	}
	return content, model
}

func TestDashboardVariables(t *testing.T) {
	_, model := readDashboard(t)
	if model.UID == "" || model.Title == "" || model.SchemaVersion < 39 {
		t.Errorf("uid %q, title %q, schemaVersion %d: want a uid, a title and schemaVersion 39 or later",
			model.UID, model.Title, model.SchemaVersion)
	}
	const datasourceType, queryType = "datasource", "query"
	variables := map[string]string{}
	for _, variable := range model.Templating.List {
		variables[variable.Name] = variable.Type
		switch variable.Type {
		case datasourceType:
			if string(variable.Query) != `"prometheus"` {
				t.Errorf("variable %s lists data sources of type %s, want prometheus", variable.Name, variable.Query)
			}
		case queryType:
			if variable.Datasource == nil || *variable.Datasource != prometheusVariable {
				t.Errorf("variable %s queries %+v, want %+v", variable.Name, variable.Datasource, prometheusVariable)
			}
		}
	}
	want := map[string]string{"datasource": datasourceType, "namespace": queryType, "benchmark": queryType}
	for name, kind := range want {
		if variables[name] != kind {
			t.Errorf("variable %s is of type %q, want %q", name, variables[name], kind)
		}
	}
}

// TestDashboardPanels checks that every panel queries the selected Prometheus for the
// selected benchmark; controllers' tests check the metric names against the operator's.
func TestDashboardPanels(t *testing.T) {
	_, model := readDashboard(t)
	if len(model.Panels) == 0 {
		t.Fatal("the dashboard has no panel")
	}
	ids := map[int]bool{}
	for _, panel := range model.Panels {
		if ids[panel.ID] {
			t.Errorf("panel id %d is used twice", panel.ID)
		}
		ids[panel.ID] = true
		if panel.Datasource != prometheusVariable {
			t.Errorf("panel %q queries %+v, want %+v", panel.Title, panel.Datasource, prometheusVariable)
		}
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q has no query", panel.Title)
		}
		for _, target := range panel.Targets {
			if target.Datasource != prometheusVariable {
				t.Errorf("panel %q query %s queries %+v, want %+v",
					panel.Title, target.RefID, target.Datasource, prometheusVariable)
			}
			for _, selector := range []string{`namespace="$namespace"`, `benchmark="$benchmark"`} {
				if !strings.Contains(target.Expr, selector) {
					t.Errorf("panel %q query %s lacks %s: %s", panel.Title, target.RefID, selector, target.Expr)
				}
			}
		}
	}
}

// TestDashboardConfigMap checks that the chart ships the dashboard file unchanged, with
// the label the Grafana sidecar looks for.
func TestDashboardConfigMap(t *testing.T) {
	content, _ := readDashboard(t)
	var configMap *unstructured.Unstructured
	for _, object := range render(t, []string{"grafanaDashboard.enabled=true"}) {
		if object.GetKind() == "ConfigMap" && object.GetName() == releaseName+"-dashboard" {
			configMap = object
		}
	}
	if configMap == nil {
		t.Fatalf("the chart rendered no ConfigMap %s-dashboard", releaseName)
	}
	if label := configMap.GetLabels()["grafana_dashboard"]; label != "1" {
		t.Errorf("the dashboard ConfigMap's grafana_dashboard label is %q, want 1", label)
	}
	data, _, err := unstructured.NestedString(configMap.Object, "data", "logbench.json")
	if err != nil {
		t.Fatal(err)
	}
	if data != strings.TrimRight(string(content), "\n") {
		t.Error("the dashboard ConfigMap's logbench.json differs from dashboards/logbench.json")
	}
}
