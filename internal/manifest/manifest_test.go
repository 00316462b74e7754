package manifest

import (
	"fmt"
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
		"wrong kind": {strings.Replace(header, "LoggingBenchmark", "Cluster", 1) + "spec: {}\n", "expected apiVersion"},
		//nolint:misspell // the misspelt field is the point
		"unknown field": {header + "spec:\n  destinatons: []\n", "unknown field(s): spec.destinatons"},
		"enum": {
			header + "spec:\n  destinations:\n  - name: a\n    type: Kafka\n",
			"Unsupported value: \"Kafka\"",
		},
		"CEL rule": {
			header + "spec:\n  postgres:\n    parameters:\n      log_destination: csvlog\n",
			"spec.destinations",
		},
		"Loki without loki": {
			header + "spec:\n  destinations:\n  - name: loki\n    type: Loki\n",
			"loki is required by Loki destinations",
		},
		"duplicate names": {
			header + "spec:\n  destinations:\n  - name: a\n    type: CSVLog\n  - name: a\n    type: Stderr\n",
			"Duplicate value",
		},
		"not an object":      {"- a\n- b\n", "not a single YAML or JSON object"},
		"bounds of duration": {header + "spec:\n  workload:\n    duration: 100ms\n", "duration"},
		"ramp beside clients": {
			header + "spec:\n  workload:\n    clients: [2]\n    ramp: {factor: 2, max: 8}\n",
			"ramp replaces clients",
		},
		"ramp by factor and step": {header + "spec:\n  workload:\n    ramp: {factor: 2, step: 1, max: 8}\n", "exactly one"},
		"ramp without growth":     {header + "spec:\n  workload:\n    ramp: {max: 8}\n", "exactly one"},
		"ramp below its start":    {header + "spec:\n  workload:\n    ramp: {start: 4, step: 1, max: 2}\n", "at least ramp.start"},
		"ramp of many counts": {
			header + "spec:\n  workload:\n    ramp: {start: 1, step: 1, max: 100}\n",
			"at most 16 client counts",
		},
		"overhead bound without baseline": {
			header + "spec:\n  baseline: {enabled: false}\n  destinations:\n  - name: a\n    type: Stderr\n" +
				"  workload:\n    ramp: {factor: 2, max: 8, stopWhen: {overheadAbovePercent: 10}}\n",
			"needs the baseline",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.message)
			}
		})
	}
}

// TestDecodeRefusesWhatWouldBreakAConfiguration is local mode's side of the CRD rules
// on what logbench writes into postgresql.conf and the shippers' configurations.
func TestDecodeRefusesWhatWouldBreakAConfiguration(t *testing.T) {
	const csv = header + "spec:\n  destinations:\n  - name: csv\n    type: CSVLog\n"
	parameter := func(name, value string) string {
		return csv + fmt.Sprintf("  postgres:\n    parameters:\n      %q: %q\n", name, value)
	}
	for name, tc := range map[string]struct{ doc, message string }{
		"a refused name with a trailing space": {parameter("archive_command ", "true"), "must be PostgreSQL parameter names"},
		"archive_command":                      {parameter("archive_command", "true"), "run a shell command, load code"},
		"a value with a newline":               {parameter("work_mem", "64MB\narchive_command = 'sh'"), "parameter values must hold no control"},
		"a value with a backslash":             {parameter("work_mem", `64MB\`), "parameter values must hold no control"},
		"a value with a single quote":          {parameter("work_mem", "64MB'"), "parameter values must hold no control"},
		"a line prefix with a newline": {
			csv + "  logging:\n    linePrefix: \"%a\\n\"\n", "linePrefix must hold no control characters",
		},
		"a destination's line prefix with a backslash": {
			csv + "    logging:\n      linePrefix: '%a \\'\n", "linePrefix must hold no control characters",
		},
		"a Loki URL with a space": {
			header + "spec:\n  destinations:\n  - name: loki\n    type: Loki\n    loki:\n      url: http://loki:3100/a b\n",
			"url must hold no spaces",
		},
		// Refused for the records it would add, as before.
		"auto_explain.log_min_duration": {parameter("auto_explain.log_min_duration", "0"), "auto_explain.*"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.message)
			}
		})
	}

	benchmark, err := Decode([]byte(parameter("work_mem", "64MB")))
	if err != nil {
		t.Fatalf("refused work_mem: %v", err)
	}
	if got := benchmark.Spec.Postgres.Parameters["work_mem"]; got != "64MB" {
		t.Errorf("work_mem = %q, want 64MB", got)
	}
}

// TestDecodeRefusesEveryUnsafeParameter holds the CRD's list of unsafe parameters to the
// operator's, in any case.
func TestDecodeRefusesEveryUnsafeParameter(t *testing.T) {
	for _, name := range v1alpha1.UnsafeParameters {
		for _, spelt := range []string{name, strings.ToUpper(name)} {
			doc := header + fmt.Sprintf("spec:\n  destinations:\n  - name: csv\n    type: CSVLog\n"+
				"  postgres:\n    parameters:\n      %s: x\n", spelt)
			if _, err := Decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), "run a shell command, load code") {
				t.Errorf("%s: error = %v, want the CRD's refusal of unsafe parameters", spelt, err)
			}
		}
	}
}

func TestDecodeAppliesTheShippingDefaults(t *testing.T) {
	benchmark, err := Decode([]byte(header + `spec:
  destinations:
  - name: fb
    type: FluentBitSidecar
    shipper: {}
  - name: loki
    type: Loki
    loki:
      url: http://loki:3100
      auth:
        basic: {secretName: loki-auth}
  - name: token
    type: Loki
    loki:
      url: http://loki:3100
      auth:
        bearerToken: {secretName: loki-token}
`))
	if err != nil {
		t.Fatal(err)
	}
	destinations := benchmark.Spec.Destinations
	shipper := destinations[0].Shipper
	if shipper.Kind != v1alpha1.ShipperFluentBit || shipper.Format != v1alpha1.FormatCSVLog {
		t.Errorf("shipper %+v, want kind FluentBit and format CSVLog", shipper)
	}
	if basic := destinations[1].Loki.Auth.Basic; basic.UsernameKey != "username" || basic.PasswordKey != "password" {
		t.Errorf("basic auth %+v, want the keys username and password", basic)
	}
	if token := destinations[2].Loki.Auth.BearerToken; token.Key != "token" {
		t.Errorf("bearer token %+v, want the key token", token)
	}
}

// TestDecodeDocuments: a file may hold ConfigMaps beside its LoggingBenchmark, in any
// order, as kubectl apply -f takes them; one LoggingBenchmark exactly, and no other kind.
func TestDecodeDocuments(t *testing.T) {
	const benchmark = "apiVersion: bench.logbench.io/v1alpha1\nkind: LoggingBenchmark\nmetadata: {name: b}\n" +
		"spec: {destinations: [{name: csv, type: CSVLog}]}\n"
	const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: queries}\ndata: {read.sql: SELECT 1;}\n"
	tests := []struct {
		name, file string
		configMaps int
		err        string
	}{
		{"benchmark alone", benchmark, 0, ""},
		{"ConfigMap first, comments", "# header\n---\n" + configMap + "---\n" + benchmark, 1, ""},
		{"two ConfigMaps", benchmark + "---\n" + configMap + "---\n" + configMap, 2, ""},
		{"two benchmarks", benchmark + "---\n" + benchmark, 0, "one LoggingBenchmark"},
		{"no benchmark", configMap, 0, "no LoggingBenchmark"},
		{"another kind", benchmark + "---\napiVersion: v1\nkind: Secret\n", 0, "one LoggingBenchmark"},
		{"unknown ConfigMap field", benchmark + "---\n" + configMap + "datta: {}\n", 0, "datta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			documents, err := DecodeDocuments([]byte(tt.file))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("DecodeDocuments: %v, want an error naming %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if documents.Benchmark.Name != "b" || len(documents.ConfigMaps) != tt.configMaps {
				t.Errorf("read %s and %d ConfigMaps, want b and %d", documents.Benchmark.Name, len(documents.ConfigMaps),
					tt.configMaps)
			}
			for _, configMap := range documents.ConfigMaps {
				if configMap.Data["read.sql"] != "SELECT 1;" {
					t.Errorf("ConfigMap data %v", configMap.Data)
				}
			}
		})
	}
}
