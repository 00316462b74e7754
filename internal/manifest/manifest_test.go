package manifest

import (
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
)

const header = "apiVersion: bench.logbench.io/v1alpha1\nkind: LoggingBenchmark\nmetadata:\n  name: t\n"

func TestDecodeAppliesCRDDefaults(t *testing.T) {
	benchmark, err := Decode([]byte(header + "spec:\n  destinations:\n  - name: csv\n    type: CSVLog\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec := benchmark.Spec
	if !spec.Baseline.Enabled || spec.Workload.Repeats != 3 || spec.Workload.Duration.Duration != 30*time.Second ||
		spec.Workload.QueryMode != v1alpha1.QueryPrepared || spec.Logging.Statement != "all" ||
		len(spec.Workload.Clients) != 2 || spec.Cleanup != "OnSuccess" {
		t.Errorf("defaults not applied: %+v", spec)
	}
	if got := spec.EffectiveDestinations(); len(got) != 2 || got[0].Name != v1alpha1.BaselineName {
		t.Errorf("effective destinations = %+v, want the baseline first", got)
	}
}

func TestDecodeRejectsWhatTheAPIServerRejects(t *testing.T) {
	for name, tc := range map[string]struct{ doc, message string }{
		"wrong kind":         {strings.Replace(header, "LoggingBenchmark", "Cluster", 1) + "spec: {}\n", "expected apiVersion"},
		"unknown field":      {header + "spec:\n  destinatons: []\n", "unknown field(s): spec.destinatons"},
		"enum":               {header + "spec:\n  destinations:\n  - name: a\n    type: Syslog\n", "Unsupported value: \"Syslog\""},
		"CEL rule":           {header + "spec:\n  postgres:\n    parameters:\n      log_destination: csvlog\n", "spec.destinations"},
		"not yet supported":  {header + "spec:\n  destinations:\n  - name: loki\n    type: Loki\n", "not supported by this version of logbench yet"},
		"duplicate names":    {header + "spec:\n  destinations:\n  - name: a\n    type: CSVLog\n  - name: a\n    type: Stderr\n", "Duplicate value"},
		"not an object":      {"- a\n- b\n", "not a single YAML or JSON object"},
		"bounds of duration": {header + "spec:\n  workload:\n    duration: 100ms\n", "duration"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.message)
			}
		})
	}
}
