package records

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/workload"
)

func builtinScript(t *testing.T, b v1alpha1.BuiltinWorkload) workload.Script {
	t.Helper()
	s, err := workload.ForBuiltin(b, "lb_unit_c2_r1_000000000000")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSettingsFor(t *testing.T) {
	minDuration := int32(250)
	logging := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementMod, MinDurationStatement: &minDuration, Duration: true,
		Connections: true, Disconnections: true}
	tests := []struct {
		name        string
		destination v1alpha1.DestinationType
		logging     v1alpha1.LoggingSpec
		want        Settings
	}{
		{"baseline logs no statements", v1alpha1.DestinationNone, logging, Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: -1}},
		{"destination takes spec.logging", v1alpha1.DestinationCSVLog, logging, Settings{Statement: v1alpha1.StatementMod, MinDurationStatementMs: 250, Duration: true,
			Connections: true, Disconnections: true}},
		{"unset minimum duration is off", v1alpha1.DestinationStderr, v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll}, Settings{Statement: v1alpha1.StatementAll, MinDurationStatementMs: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SettingsFor(v1alpha1.Destination{Name: "d", Type: tt.destination}, tt.logging); got != tt.want {
				t.Errorf("SettingsFor = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestExpected(t *testing.T) {
	var (
		none       = Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: -1}
		all        = Settings{Statement: v1alpha1.StatementAll, MinDurationStatementMs: -1}
		mod        = Settings{Statement: v1alpha1.StatementMod, MinDurationStatementMs: -1}
		ddl        = Settings{Statement: v1alpha1.StatementDDL, MinDurationStatementMs: -1}
		duration   = Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: -1, Duration: true}
		allMin0    = Settings{Statement: v1alpha1.StatementAll, MinDurationStatementMs: 0}
		allMin100  = Settings{Statement: v1alpha1.StatementAll, MinDurationStatementMs: 100}
		durMin100  = Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: 100, Duration: true}
		sessions   = Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: -1, Connections: true, Disconnections: true}
		allConnect = Settings{Statement: v1alpha1.StatementAll, MinDurationStatementMs: 100, Connections: true}
		selectOnly = builtinScript(t, v1alpha1.WorkloadSelectOnly)
		tpcb       = builtinScript(t, v1alpha1.WorkloadTPCBLike)
	)
	tests := []struct {
		name         string
		exec         Execution
		settings     Settings
		want         Expectation
		reasonSubstr string
	}{
		{"nothing logged", Execution{Script: tpcb, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 100}, none,
			Expectation{Records: 0}, ""},
		{"all, simple: one record a statement", Execution{Script: tpcb, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 100}, all,
			Expectation{Records: 700, Max: 700}, ""},
		{"all, prepared: one execute record a statement", Execution{Script: selectOnly, QueryMode: v1alpha1.QueryPrepared, Clients: 4, Transactions: 100}, all,
			Expectation{Records: 100, Max: 100}, ""},
		{"mod: updates and the insert", Execution{Script: tpcb, QueryMode: v1alpha1.QueryExtended, Clients: 2, Transactions: 100}, mod,
			Expectation{Records: 400, Max: 400}, ""},
		{"ddl: none of pgbench's statements", Execution{Script: tpcb, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 100}, ddl,
			Expectation{Records: 0}, ""},
		{"duration, simple: one a statement", Execution{Script: tpcb, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 100}, duration,
			Expectation{Records: 700, Max: 700}, ""},
		{"duration, extended: parse, bind, execute", Execution{Script: tpcb, QueryMode: v1alpha1.QueryExtended, Clients: 2, Transactions: 100}, duration,
			Expectation{Records: 2100, Max: 2100}, ""},
		{"duration, prepared: bind, execute, one parse a session", Execution{Script: tpcb, QueryMode: v1alpha1.QueryPrepared, Clients: 2, Transactions: 100}, duration,
			Expectation{Records: 1414, Max: 1414}, ""},
		{"all and min 0: statement and duration records", Execution{Script: selectOnly, QueryMode: v1alpha1.QueryExtended, Clients: 2, Transactions: 10}, allMin0,
			Expectation{Records: 40, Max: 40}, ""},
		{"min above 0 is an estimate", Execution{Script: selectOnly, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 10}, allMin100,
			Expectation{Records: 10, Max: 20, Estimate: true}, "log_min_duration_statement=100 ms"},
		{"min above 0 with log_duration stays exact", Execution{Script: selectOnly, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 10}, durMin100,
			Expectation{Records: 10, Max: 10}, ""},
		{"sessions without transactions may not prepare", Execution{Script: selectOnly, QueryMode: v1alpha1.QueryPrepared, Clients: 4, Transactions: 2}, duration,
			Expectation{Records: 4, Max: 8, Estimate: true}, "fewer transactions (2) than clients (4)"},
		{"connections and disconnections: two a session, pgbench's own first session included", Execution{Script: tpcb, QueryMode: v1alpha1.QuerySimple, Clients: 4, Transactions: 100}, sessions,
			Expectation{Records: 10, Max: 10}, ""},
		{"connections add to both bounds of an estimate", Execution{Script: selectOnly, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 10}, allConnect,
			Expectation{Records: 13, Max: 23, Estimate: true}, "log_min_duration_statement=100 ms"},
		{"failed transactions are an estimate", Execution{Script: tpcb, QueryMode: v1alpha1.QuerySimple, Clients: 2, Transactions: 100, Failed: 3,
			Statements: []pgbench.StatementStat{{Failures: 3, Retries: 2}}}, all,
			Expectation{Records: 700, Max: 700 + 5*(8*2+1), Estimate: true}, "3 failed transactions and 2 retries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Expected(tt.exec, tt.settings)
			reason := got.Reason
			got.Reason = ""
			if got.upper() != tt.want.upper() || got.Records != tt.want.Records || got.Estimate != tt.want.Estimate {
				t.Errorf("Expected = %+v, want %+v", got, tt.want)
			}
			if tt.want.Estimate != (reason != "") || !strings.Contains(reason, tt.reasonSubstr) {
				t.Errorf("reason %q, want one containing %q", reason, tt.reasonSubstr)
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	tests := []struct {
		name            string
		expectation     Expectation
		delivered       int64
		wantDropped     *int64
		accountingError bool
	}{
		{"all delivered", Expectation{Records: 100}, 100, ptr(0), false},
		{"some dropped", Expectation{Records: 100}, 60, ptr(40), false},
		{"more than expected is reported, not clamped", Expectation{Records: 100}, 103, ptr(-3), true},
		{"estimate has no dropped count", Expectation{Records: 100, Max: 200, Estimate: true}, 150, nil, false},
		{"estimate exceeded", Expectation{Records: 100, Max: 200, Estimate: true}, 201, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Reconcile(tt.expectation, tt.delivered)
			if got.Expected != tt.expectation.Records || got.Delivered != tt.delivered || got.ExpectedIsEstimate != tt.expectation.Estimate {
				t.Errorf("Reconcile = %+v", got)
			}
			if (got.Dropped == nil) != (tt.wantDropped == nil) || got.Dropped != nil && *got.Dropped != *tt.wantDropped {
				t.Errorf("Dropped = %v, want %v", deref(got.Dropped), deref(tt.wantDropped))
			}
			if (got.AccountingError != "") != tt.accountingError {
				t.Errorf("AccountingError = %q, want set: %t", got.AccountingError, tt.accountingError)
			}
		})
	}
}

func ptr(n int64) *int64 { return &n }

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
