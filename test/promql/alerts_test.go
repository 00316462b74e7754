package promql

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// rulesFile is the Prometheus rule file the chart's PrometheusRule carries.
const rulesFile = "../../charts/logbench/alerts/logbench.rules.yaml"

// operatorSeries are series as the operator exports them: a failed benchmark, and rows
// that lost records (counted exactly, or known lost below an estimate), that lost none,
// whose records logbench could not all see (unverified, never dropped), that stored
// duplicates, and whose counts do not add up. Labels are sorted, as the test compares them.
const operatorSeries = `
load 1m
	logbench_benchmark_phase{namespace="a", benchmark="failed", phase="Failed"} 1
	logbench_benchmark_phase{namespace="a", benchmark="failed", phase="Running"} 0
	logbench_benchmark_phase{namespace="a", benchmark="ok", phase="Failed"} 0
	logbench_benchmark_phase{namespace="a", benchmark="ok", phase="Succeeded"} 1
	logbench_result_records_dropped{namespace="a", benchmark="ok", destination="lossy", type="Loki", clients="4"} 120
	logbench_result_records_dropped{namespace="a", benchmark="ok", destination="exact", type="CSVLog", clients="4"} 0
	logbench_result_records_dropped_at_least{namespace="a", benchmark="ok", destination="sampled", type="Stdout", clients="2"} 7
	logbench_result_records_dropped{namespace="a", benchmark="ok", destination="rotated", type="Stdout", clients="2"} 0
	logbench_result_records_unverified{namespace="a", benchmark="ok", destination="rotated", type="Stdout", clients="2"} 17327
	logbench_result_records_duplicates{namespace="a", benchmark="ok", destination="retried", type="Loki", clients="2"} 112
	logbench_result_accounting_error{namespace="a", benchmark="ok", destination="lossy", type="Loki", clients="4"} 0
	logbench_result_accounting_error{namespace="a", benchmark="ok", destination="double", type="Loki", clients="2"} 1
`

// TestAlertRules loads the rule file as Prometheus does, then evaluates each alert's
// expression over operatorSeries: it must fire for exactly the series that call for it.
func TestAlertRules(t *testing.T) {
	want := map[string][]string{
		"LogbenchBenchmarkFailed": {`{benchmark="failed", namespace="a"}`},
		"LogbenchRecordsDropped": {
			`{benchmark="ok", clients="2", destination="sampled", namespace="a"}`,
			`{benchmark="ok", clients="4", destination="lossy", namespace="a"}`,
		},
		"LogbenchAccountingError": {`{benchmark="ok", clients="2", destination="double", namespace="a"}`},
	}
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, parser.NewParser(parser.Options{}),
		promslog.NewNopLogger())
	if len(errs) > 0 {
		t.Fatalf("Prometheus refuses %s: %v", rulesFile, errs)
	}
	evaluate := evaluator(t, operatorSeries)
	alerts := 0
	for _, group := range groups.Groups {
		for _, rule := range group.Rules {
			if rule.Alert == "" {
				continue
			}
			alerts++
			firing, err := evaluate(rule.Expr)
			if err != nil {
				t.Fatalf("%s: %v", rule.Alert, err)
			}
			if !slices.Equal(firing, want[rule.Alert]) {
				t.Errorf("%s fires for %v, want %v", rule.Alert, firing, want[rule.Alert])
			}
			if rule.Labels["severity"] == "" {
				t.Errorf("%s has no severity label, which Alertmanager routes by", rule.Alert)
			}
		}
	}
	if alerts != len(want) {
		t.Errorf("%s has %d alerts, the test knows %d", rulesFile, alerts, len(want))
	}
}

// evaluator loads series as a Prometheus test file does and returns a function that
// evaluates a PromQL expression over them with Prometheus's engine, giving the labels of
// each sample of its answer, sorted.
func evaluator(t *testing.T, series string) func(expr string) ([]string, error) {
	storage := promqltest.LoadedStorage(t, series)
	engine := promqltest.NewTestEngineWithOpts(t, promql.EngineOpts{
		MaxSamples: 1000, Timeout: time.Minute, Parser: parser.NewParser(parser.Options{}),
	})
	return func(expr string) ([]string, error) {
		query, err := engine.NewInstantQuery(t.Context(), storage, nil, expr, time.Unix(0, 0))
		if err != nil {
			return nil, err
		}
		vector, err := query.Exec(t.Context()).Vector()
		if err != nil {
			return nil, err
		}
		labels := make([]string, 0, len(vector))
		for _, sample := range vector {
			labels = append(labels, sample.Metric.String())
		}
		slices.Sort(labels)
		return labels, nil
	}
}
