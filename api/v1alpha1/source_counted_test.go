package v1alpha1

import (
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// TestSettingsCountedAtTheSource checks what a server runs with, and how status rows
// name it, for the settings that need a count at the source, set in spec.logging and
// over it by a destination; the baseline runs with none of them.
func TestSettingsCountedAtTheSource(t *testing.T) {
	zero, off, tenth, half := int32(0), int32(-1), 0.1, 0.5
	yes := true
	explain := &AutoExplainSpec{MinDuration: 5, Analyze: true, Buffers: true, Format: AutoExplainJSON, SampleRate: &half}
	spec := LoggingBenchmarkSpec{Logging: LoggingSpec{Statement: StatementNone, MinDurationSample: &zero,
		StatementSampleRate: &tenth}}
	tests := []struct {
		name        string
		destination Destination
		settings    string
		parameters  map[string]string
	}{
		{
			name:        "spec.logging's sample",
			destination: Destination{Type: DestinationCSVLog},
			settings:    "statement=none,minDurationSample=0,statementSampleRate=0.1",
			parameters:  map[string]string{"log_min_duration_sample": "0", "log_statement_sample_rate": "0.1"},
		},
		{
			name: "a destination's own: no sample, plans, lock waits, temporary files, transactions",
			destination: Destination{Type: DestinationJSONLog, Logging: &LoggingOverride{MinDurationSample: &off,
				TransactionSampleRate: &tenth, AutoExplain: explain, LockWaits: &yes, TempFiles: &zero}},
			settings: "statement=none,statementSampleRate=0.1,transactionSampleRate=0.1," +
				"autoExplain=5/analyze/buffers/json/sample=0.5,lockWaits=on,tempFiles=0",
			parameters: map[string]string{"log_min_duration_sample": "-1", "log_statement_sample_rate": "0.1",
				"log_transaction_sample_rate": "0.1", "log_lock_waits": "on", "log_temp_files": "0",
				"auto_explain.log_min_duration": "5", "auto_explain.log_analyze": "on", "auto_explain.log_buffers": "on",
				"auto_explain.log_verbose": "off", "auto_explain.log_nested_statements": "off",
				"auto_explain.log_format": "json", "auto_explain.sample_rate": "0.5"},
		},
		{
			name:        "the baseline",
			destination: Destination{Type: DestinationNone},
			settings:    "statement=none",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spec.LoggingSettings(tt.destination); got != tt.settings {
				t.Errorf("LoggingSettings = %q, want %q", got, tt.settings)
			}
			parameters := spec.ServerParameters(tt.destination)
			counted := spec.Logging.For(tt.destination).SourceCountedParameters()
			want := tt.parameters
			if want == nil {
				want = map[string]string{}
			}
			if !maps.Equal(counted, want) {
				t.Errorf("SourceCountedParameters = %v, want %v", counted, want)
			}
			for name, value := range want {
				if parameters[name] != value {
					t.Errorf("the server runs with %s=%q, want %q", name, parameters[name], value)
				}
			}
			if UsesAutoExplain(parameters) != (tt.parameters["auto_explain.log_min_duration"] != "") {
				t.Errorf("UsesAutoExplain(%v) = %t", parameters, UsesAutoExplain(parameters))
			}
		})
	}
}

// TestClustersRefuseWhatOnlyTheCounterCounts: without spec.postgres.counter every field
// that needs one is refused, wherever it is set (the user's scripts too), naming the
// extension.
func TestClustersRefuseWhatOnlyTheCounterCounts(t *testing.T) {
	zero, tenth := int32(0), 0.1
	off := false
	spec := LoggingBenchmarkSpec{
		Logging: LoggingSpec{TransactionSampleRate: &tenth},
		Destinations: []Destination{
			{Name: "csv", Type: DestinationCSVLog},
			{Name: "plans", Type: DestinationStderr, Logging: &LoggingOverride{AutoExplain: &AutoExplainSpec{}, TempFiles: &zero}},
			{Name: "waits", Type: DestinationJSONLog, Logging: &LoggingOverride{LockWaits: &off}},
		},
		Workload: WorkloadSpec{Scripts: &WorkloadScripts{ConfigMap: ConfigMapReference{Name: "queries"},
			Files: []ScriptFile{{Key: "read.sql", Weight: 1}}}},
	}
	want := []string{"spec.logging.transactionSampleRate", "spec.destinations[1].logging.autoExplain",
		"spec.destinations[1].logging.tempFiles", "spec.destinations[2].logging.lockWaits", "spec.workload.scripts"}
	if got := spec.FieldsNeedingCounter(); !reflect.DeepEqual(got, want) {
		t.Errorf("FieldsNeedingCounter = %q, want %q", got, want)
	}
	err := spec.ValidateForClusters()
	if !errors.Is(err, ErrCounterNotLoaded) || !strings.Contains(err.Error(), strings.Join(want, ", ")) ||
		!strings.Contains(err.Error(), "logbench_counter extension") || !strings.Contains(err.Error(), "spec.postgres.counter") {
		t.Errorf("ValidateForClusters = %v, want the fields refused, naming the extension and spec.postgres.counter", err)
	}
	for _, counter := range []CounterSpec{
		{Source: CounterInOperandImage}, {Source: CounterInExtensionImage, ExtensionImage: "ghcr.io/logbench/counter:18"},
	} {
		counted := spec
		counted.Postgres.ImageName = "ghcr.io/logbench/postgresql:17-standard-bookworm-counter"
		counted.Postgres.Counter = &counter
		if err := counted.ValidateForClusters(); err != nil {
			t.Errorf("ValidateForClusters with the counter from %s: %v", counter.Source, err)
		}
	}
	inDefaultImage := spec
	inDefaultImage.Postgres.Counter = &CounterSpec{Source: CounterInOperandImage}
	if err := inDefaultImage.ValidateForClusters(); !errors.Is(err, ErrCounterNotInDefaultImage) {
		t.Errorf("ValidateForClusters with the counter in CloudNativePG's default image = %v, want %v", err,
			ErrCounterNotInDefaultImage)
	}
	plain := LoggingBenchmarkSpec{Logging: LoggingSpec{Statement: StatementAll, Connections: true},
		Destinations: []Destination{{Name: "csv", Type: DestinationCSVLog}}}
	if err := plain.ValidateForClusters(); err != nil {
		t.Errorf("ValidateForClusters of a spec the model predicts: %v", err)
	}
}
