package records

import (
	"reflect"
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
	audited := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone, Pgaudit: &v1alpha1.PgauditSpec{
		Log: []v1alpha1.PgauditClass{v1alpha1.PgauditRead, v1alpha1.PgauditMisc}}}
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
		{"pgaudit's classes", v1alpha1.DestinationJSONLog, audited, Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: -1,
			Pgaudit: []v1alpha1.PgauditClass{v1alpha1.PgauditRead, v1alpha1.PgauditMisc}}},
		{"the baseline audits nothing", v1alpha1.DestinationNone, audited, Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SettingsFor(v1alpha1.Destination{Name: "d", Type: tt.destination}, tt.logging); !reflect.DeepEqual(got, tt.want) {
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
			if got.Upper() != tt.want.Upper() || got.Records != tt.want.Records || got.Estimate != tt.want.Estimate {
				t.Errorf("Expected = %+v, want %+v", got, tt.want)
			}
			if tt.want.Estimate != (reason != "") || !strings.Contains(reason, tt.reasonSubstr) {
				t.Errorf("reason %q, want one containing %q", reason, tt.reasonSubstr)
			}
		})
	}
}

func TestReconcile(t *testing.T) {
	estimate := Expectation{Records: 100, Max: 200, Estimate: true}
	tests := []struct {
		name            string
		expectation     Expectation
		count           Count
		wantDropped     *int64
		wantAtLeast     *int64
		accountingError bool
	}{
		{"all delivered", Expectation{Records: 100}, Count{Delivered: 100}, new(int64(0)), nil, false},
		{"some dropped", Expectation{Records: 100}, Count{Delivered: 60}, new(int64(40)), nil, false},
		{"late records are not dropped", Expectation{Records: 100}, Count{Delivered: 60, Late: 30}, new(int64(10)), nil, false},
		{"more than expected is reported, not clamped", Expectation{Records: 100}, Count{Delivered: 103}, new(int64(-3)),
			nil, true},
		{"late records count towards an excess", Expectation{Records: 100}, Count{Delivered: 90, Late: 13}, new(int64(-3)),
			nil, true},
		{"estimate reached has no dropped count", estimate, Count{Delivered: 150}, nil, nil, false},
		{"below an estimate's lower bound at least the shortfall is dropped", estimate, Count{Delivered: 60}, nil,
			new(int64(40)), false},
		{"late records narrow the shortfall below the bound", estimate, Count{Delivered: 60, Late: 30}, nil,
			new(int64(10)), false},
		{"estimate exceeded", estimate, Count{Delivered: 201}, nil, nil, true},
		// Ten records lost before the shipper read them, ten others stored twice by a
		// retried push: Loki holds 100, which once netted the loss away.
		{"duplicates never offset a loss", Expectation{Records: 100}, Count{Delivered: 100, Duplicates: 10}, nil,
			new(int64(10)), false},
		{"duplicates explain an excess", Expectation{Records: 100}, Count{Delivered: 112, Duplicates: 12}, nil,
			new(int64(0)), false},
		{"an excess beyond the duplicates is an accounting error", Expectation{Records: 100},
			Count{Delivered: 112, Duplicates: 5}, nil, new(int64(0)), true},
		{"duplicates below an estimate", estimate, Count{Delivered: 90, Duplicates: 5}, nil, new(int64(15)), false},
		// The kubelet rotated the log under the stream: 17,327 records not read by
		// logbench, none shown lost.
		{"unverified records are not dropped", Expectation{Records: 37_841},
			Count{Delivered: 20_514, Unverified: 17_327, UnverifiedReason: "rotated"}, new(int64(0)), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Reconcile(tt.expectation, tt.count)
			if got.Expected != tt.expectation.Records || got.Delivered != tt.count.Delivered ||
				got.ArrivedLate != tt.count.Late || got.ExpectedIsEstimate != tt.expectation.Estimate ||
				got.Duplicates != tt.count.Duplicates || got.Unverified != tt.count.Unverified ||
				got.UnverifiedReason != tt.count.UnverifiedReason {
				t.Errorf("Reconcile = %+v", got)
			}
			if !equalCount(got.Dropped, tt.wantDropped) {
				t.Errorf("Dropped = %v, want %v", deref(got.Dropped), deref(tt.wantDropped))
			}
			if !equalCount(got.DroppedAtLeast, tt.wantAtLeast) {
				t.Errorf("DroppedAtLeast = %v, want %v", deref(got.DroppedAtLeast), deref(tt.wantAtLeast))
			}
			if (got.AccountingError != "") != tt.accountingError {
				t.Errorf("AccountingError = %q, want set: %t", got.AccountingError, tt.accountingError)
			}
		})
	}
}

// TestDuplicatesNeedARetry: what Loki stored beyond the fewest records an earlier stage
// held is duplicates only when a push was retried; otherwise it is left to the
// accounting error.
func TestDuplicatesNeedARetry(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stored  int64
		retried bool
		earlier []int64
		want    int64
	}{
		{"a retried push stored twice", 40_392, true, []int64{40_280, 40_280}, 112},
		{"the fewest earlier records bound it", 100, true, []int64{100, 90}, 10},
		{"no retry, no duplicates", 40_392, false, []int64{40_280}, 0},
		{"fewer stored than sent", 80, true, []int64{100}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Duplicates(tc.stored, tc.retried, tc.earlier...); got != tc.want {
				t.Errorf("Duplicates = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRecountTurnsDropsIntoLateArrivals(t *testing.T) {
	want := Expectation{Records: 100}
	atDrainEnd := Reconcile(want, Count{Delivered: 70})
	atDrainEnd.DropReason = "300 records needed retries"
	const sent = "sent"
	stored := int64(70)
	atDrainEnd.Stages = &v1alpha1.RecordStages{Written: new(int64(100)), Read: new(int64(100)), Sent: new(int64(70)), Stored: &stored, LostAt: sent}
	for name, tc := range map[string]struct {
		recounted             int64
		wantLate, wantDropped int64
		wantReason, wantLost  string
	}{
		"nothing more":                     {70, 0, 30, atDrainEnd.DropReason, sent},
		"some arrived after the drain":     {95, 25, 5, atDrainEnd.DropReason, sent},
		"a recount that fell adds nothing": {60, 0, 30, atDrainEnd.DropReason, sent},
		"every record arrived, some late":  {100, 30, 0, "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := Recount(atDrainEnd, want, tc.recounted)
			if got.Delivered != 70 || got.ArrivedLate != tc.wantLate || got.Dropped == nil || *got.Dropped != tc.wantDropped ||
				got.DropReason != tc.wantReason {
				t.Errorf("Recount = %+v, want 70 delivered, %d late, %d dropped, reason %q",
					got, tc.wantLate, tc.wantDropped, tc.wantReason)
			}
			if got.Stages == nil || *got.Stages.Sent != 70 || got.Stages.LostAt != tc.wantLost {
				t.Errorf("Stages = %+v, want those counted at the drain's end, lost at %q", got.Stages, tc.wantLost)
			}
		})
	}
	if atDrainEnd.Stages.LostAt != sent {
		t.Errorf("Recount changed the stages it was given: %+v", atDrainEnd.Stages)
	}
}

// A recount is a count: duplicates the drain counted by identity are a lower bound once
// late records arrived, which may repeat others, and the drop with them.
func TestRecountMakesDuplicatesCountedByIdentityALowerBound(t *testing.T) {
	want := Expectation{Records: 100}
	atDrainEnd := Reconcile(want, Count{Delivered: 75, Duplicates: 5, DuplicatesExact: true})
	atDrainEnd.Stages = &v1alpha1.RecordStages{Sent: new(int64(70)), Stored: new(int64(75)), Duplicates: 5, DuplicatesExact: true}
	if atDrainEnd.Dropped == nil || *atDrainEnd.Dropped != 30 {
		t.Fatalf("at the drain's end: %+v, want 30 dropped exactly", atDrainEnd)
	}
	got := Recount(atDrainEnd, want, 90)
	if got.Dropped != nil || got.DroppedAtLeast == nil || *got.DroppedAtLeast != 15 || got.ArrivedLate != 15 {
		t.Errorf("Recount = %+v, want 15 late and at least 15 dropped", got)
	}
	if got.Stages == nil || got.Stages.DuplicatesExact || got.Stages.Duplicates != 5 {
		t.Errorf("Stages = %+v, want 5 duplicates, no longer exact", got.Stages)
	}
	if !atDrainEnd.Stages.DuplicatesExact {
		t.Errorf("Recount changed the stages it was given: %+v", atDrainEnd.Stages)
	}
	if unchanged := Recount(atDrainEnd, want, 75); !unchanged.Stages.DuplicatesExact {
		t.Errorf("a recount that found nothing late made the duplicates inexact: %+v", unchanged.Stages)
	}
}

func equalCount(got, want *int64) bool {
	return (got == nil) == (want == nil) && (got == nil || *got == *want)
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
