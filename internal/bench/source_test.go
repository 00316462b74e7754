package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench/benchtest"
)

// scriptedSource answers the counts of records, one a call and the last one after that,
// and the sessions likewise, all since one start unless restarted says otherwise.
type scriptedSource struct {
	counts, sessions []int64
	// restartedAt is the call of Count from which counting started anew; 0 never.
	restartedAt int
	countCalls  int
	tags        []string
}

var counterStart = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

func (s *scriptedSource) Count(_ context.Context, tag string) (SourceCount, error) {
	s.countCalls++
	s.tags = append(s.tags, tag)
	since := counterStart
	if s.restartedAt > 0 && s.countCalls >= s.restartedAt {
		since = since.Add(time.Hour)
	}
	return SourceCount{Records: next(&s.counts), Since: since}, nil
}

func (s *scriptedSource) Sessions(context.Context, string) (int64, error) {
	return next(&s.sessions), nil
}

// next pops the first value of a script, keeping the last one.
func next(script *[]int64) int64 {
	if len(*script) == 0 {
		return 0
	}
	v := (*script)[0]
	if len(*script) > 1 {
		*script = (*script)[1:]
	}
	return v
}

// countedExecution is the select-only run of selectOnlyOutput (1000 transactions, one
// statement each) to a csvlog file, with logging and a source.
func countedExecution(t *testing.T, logging v1alpha1.LoggingSpec, source Source) Execution {
	return Execution{
		Destination: v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog},
		Logging:     logging,
		Workload: v1alpha1.WorkloadSpec{Builtin: v1alpha1.WorkloadSelectOnly, QueryMode: v1alpha1.QueryPrepared,
			Scale: 1, Duration: metav1.Duration{Duration: time.Second}},
		Clients: 1, Repeat: 1, DrainTimeout: 10 * time.Second,
		Tag:       "lb_csv_c1_r1_000000000000",
		ScriptDir: t.TempDir(),
		Clock:     benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)),
		Source:    source,
	}
}

func selectOnlyRunner(context.Context, []string, []string) ([]byte, error) {
	return []byte(selectOnlyOutput), nil
}

func TestRunCountsTheExpectedRecordsAtTheSource(t *testing.T) {
	zero, tenth := int32(0), 0.1
	all := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll}
	sampled := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone, MinDurationSample: &zero, StatementSampleRate: &tenth}
	tests := []struct {
		name    string
		logging v1alpha1.LoggingSpec
		// counts are the source's readings: before pgbench, then after it.
		counts       []int64
		destination  arrivingDestination
		wantExpected int64
		wantDropped  int64
		wantLate     int64
		// accountingError is part of the row's accounting error, "" for none.
		accountingError string
	}{
		{name: "the count agrees with the model", logging: all, counts: []int64{7, 1007},
			destination: arrivingDestination{step: 400, total: 1000}, wantExpected: 1000},
		{name: "a drop against the count is exact", logging: sampled, counts: []int64{0, 120},
			destination: arrivingDestination{step: 100, total: 100}, wantExpected: 120, wantDropped: 20},
		{name: "the count disagrees with the model", logging: all, counts: []int64{0, 1003},
			destination: arrivingDestination{step: 1003, total: 1003}, wantExpected: 1003,
			accountingError: "the server counted 1003 records of the run at the source and the model predicts 1000"},
		// Backends log their disconnections as they exit: the count read when the
		// destination first holds every record counted has grown, and the drain waits
		// for the rest.
		{name: "the count grows while the drain waits", logging: sampled, counts: []int64{0, 100, 102},
			destination: arrivingDestination{step: 50, total: 102}, wantExpected: 102},
		// The final count, read after the recount, has grown again: the records the
		// recount found beyond the drain's arrived late.
		{name: "the count grows after the drain", logging: sampled, counts: []int64{0, 100, 100, 101},
			destination: arrivingDestination{step: 100, total: 101}, wantExpected: 101, wantLate: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			source := &scriptedSource{counts: tt.counts, sessions: []int64{2, 1, 0}}
			dest := tt.destination
			exec := countedExecution(t, tt.logging, source)
			result, err := Run(context.Background(), exec, selectOnlyRunner, &dest)
			if err != nil {
				t.Fatal(err)
			}
			r := result.Records
			if r.ExpectedSource != v1alpha1.ExpectedCounted || r.ExpectedIsEstimate || r.Expected != tt.wantExpected ||
				r.Dropped == nil || *r.Dropped != tt.wantDropped || r.ArrivedLate != tt.wantLate {
				t.Errorf("records %+v, want %d counted at the source, %d dropped, %d late", r, tt.wantExpected,
					tt.wantDropped, tt.wantLate)
			}
			if (tt.accountingError == "") != (r.AccountingError == "") || !strings.Contains(r.AccountingError, tt.accountingError) {
				t.Errorf("accounting error %q, want %q", r.AccountingError, tt.accountingError)
			}
			for _, tag := range source.tags {
				if tag != exec.Tag {
					t.Errorf("the source was read for %q, want the run's tag %q", tag, exec.Tag)
				}
			}
		})
	}
}

func TestRunRefusesWhatOnlyTheSourceCounts(t *testing.T) {
	explained := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone,
		AutoExplain: &v1alpha1.AutoExplainSpec{MinDuration: 0}}
	ran := false
	runner := func(context.Context, []string, []string) ([]byte, error) {
		ran = true
		return []byte(selectOnlyOutput), nil
	}
	_, err := Run(context.Background(), countedExecution(t, explained, nil), runner, &arrivingDestination{})
	if !errors.Is(err, ErrNeedsSource) || !strings.Contains(err.Error(), "autoExplain=0") || ran {
		t.Errorf("Run without a source: %v (pgbench ran: %t), want ErrNeedsSource naming autoExplain before pgbench", err, ran)
	}
}

func TestRunFailsWhenTheSourceCannotCountTheRun(t *testing.T) {
	all := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll}
	tests := []struct {
		name   string
		source *scriptedSource
		want   string
	}{
		{"the server restarted its counting", &scriptedSource{counts: []int64{0, 1000}, restartedAt: 2},
			"started anew during the run"},
		{"the run's sessions outlive the drain's deadline", &scriptedSource{counts: []int64{0, 1000}, sessions: []int64{1}},
			errSessionsRemain.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dest := arrivingDestination{step: 1000, total: 1000}
			_, err := Run(context.Background(), countedExecution(t, all, tt.source), selectOnlyRunner, &dest)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run: %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
