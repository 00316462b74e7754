package v1alpha1

import (
	"reflect"
	"testing"
)

// TestDestinationLoggingOverridesFieldByField checks what a destination's server runs
// with, and how status rows name it, when the destination sets some of spec.logging's
// fields: the ones it sets win, the others come from spec.logging, and the baseline logs
// nothing whatever it is given.
func TestDestinationLoggingOverridesFieldByField(t *testing.T) {
	on, off := true, false
	none, mod := StatementNone, StatementMod
	minDuration, prefix := int32(250), LinePrefix("%m %a ")
	audit := &PgauditSpec{Log: []PgauditClass{PgauditRead, PgauditWrite}, LogRelation: true}
	spec := LoggingBenchmarkSpec{
		Postgres: PostgresSpec{Parameters: map[string]ParameterValue{"work_mem": "8MB"}},
		Logging:  LoggingSpec{Statement: StatementAll, Connections: true, TrackIOTiming: true, LinePrefix: "%m [%p] %a "},
	}
	tests := []struct {
		name        string
		destination Destination
		want        LoggingSpec
		settings    string
		parameters  map[string]string
	}{
		{
			name:        "no override takes spec.logging",
			destination: Destination{Type: DestinationCSVLog},
			want:        spec.Logging,
			settings:    "statement=all,connections=on,trackIOTiming=on",
		},
		{
			name:        "duration only",
			destination: Destination{Type: DestinationCSVLog, Logging: &LoggingOverride{Statement: &none, Duration: &on}},
			want: LoggingSpec{Statement: StatementNone, Duration: true, Connections: true, TrackIOTiming: true,
				LinePrefix: "%m [%p] %a "},
			settings: "statement=none,duration=on,connections=on,trackIOTiming=on",
			parameters: map[string]string{"log_statement": "none", "log_duration": "on", "log_connections": "on",
				"log_min_duration_statement": "-1"},
		},
		{
			name: "every field",
			destination: Destination{Type: DestinationStderr, Logging: &LoggingOverride{
				Statement: &mod, MinDurationStatement: &minDuration, Duration: &on, Connections: &off,
				Disconnections: &on, TrackIOTiming: &off, Pgaudit: audit, LinePrefix: &prefix,
			}},
			want: LoggingSpec{Statement: StatementMod, MinDurationStatement: &minDuration, Duration: true,
				Disconnections: true, Pgaudit: audit, LinePrefix: prefix},
			settings: `statement=mod,minDurationStatement=250,duration=on,disconnections=on,` +
				`pgaudit=read+write/relation,linePrefix="%m %a "`,
			parameters: map[string]string{"log_statement": "mod", "log_min_duration_statement": "250",
				"log_connections": "off", "log_disconnections": "on", "track_io_timing": "off",
				"log_line_prefix": string(prefix), "pgaudit.log": "read, write", "pgaudit.log_relation": "on"},
		},
		{
			name:        "the baseline keeps only the line prefix and track_io_timing",
			destination: Destination{Type: DestinationNone},
			want:        LoggingSpec{Statement: StatementNone, TrackIOTiming: true, LinePrefix: "%m [%p] %a "},
			settings:    "statement=none,trackIOTiming=on",
			parameters:  map[string]string{"log_statement": "none", "log_connections": "off", "work_mem": "8MB"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := spec.Logging.For(tt.destination)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("For = %+v, want %+v", got, tt.want)
			}
			if twice := got.For(tt.destination); !reflect.DeepEqual(twice, got) {
				t.Errorf("For applied twice = %+v, want %+v", twice, got)
			}
			if settings := spec.LoggingSettings(tt.destination); settings != tt.settings {
				t.Errorf("LoggingSettings = %q, want %q", settings, tt.settings)
			}
			parameters := spec.ServerParameters(tt.destination)
			for name, value := range tt.parameters {
				if parameters[name] != value {
					t.Errorf("parameter %s = %q, want %q", name, parameters[name], value)
				}
			}
		})
	}
	if spec.Logging.Duration || spec.Logging.Statement != StatementAll {
		t.Errorf("an override changed spec.logging itself: %+v", spec.Logging)
	}
}
