package records

import "github.com/logbench/logbench/api/v1alpha1"

// Settings are the server settings that decide which statement records a run produces.
type Settings struct {
	// Statement is log_statement; empty means PostgreSQL's default, none.
	Statement v1alpha1.StatementLogging
	// MinDurationStatementMs is log_min_duration_statement; -1 is off.
	MinDurationStatementMs int32
	// Duration is log_duration.
	Duration bool
	// Connections is log_connections; Disconnections is log_disconnections.
	Connections, Disconnections bool
	// Pgaudit are the classes pgaudit.log audits; none when pgaudit is off.
	Pgaudit []v1alpha1.PgauditClass
	// Unpredicted names the settings that log records of the run no model predicts (a
	// random sample, plans, lock waits, temporary files), as spec.logging names them:
	// only a count at the source knows how many.
	Unpredicted []string
}

// SettingsFor returns the settings the destination's server runs with, as
// v1alpha1.LoggingBenchmarkSpec.ServerParameters sets them: l, spec.logging, with the
// destination's own logging over it; the baseline logs no statements.
func SettingsFor(d v1alpha1.Destination, l v1alpha1.LoggingSpec) Settings {
	l = l.For(d)
	s := Settings{Statement: l.Statement, MinDurationStatementMs: l.MinDurationStatementMs(), Duration: l.Duration,
		Connections: l.Connections, Disconnections: l.Disconnections}
	if l.Pgaudit != nil {
		s.Pgaudit = l.Pgaudit.Log
	}
	s.Unpredicted = l.UnpredictedSettings()
	return s
}
