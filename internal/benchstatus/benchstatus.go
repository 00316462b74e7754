// Package benchstatus computes a LoggingBenchmark's status from what was observed of its
// runs: the operator calls it on every pass and local mode once at the end, so that the
// same runs give the same status, conditions included, wherever they ran. Its name says
// whose status it computes, apart from the API's status types and the controller's write.
package benchstatus

import (
	"cmp"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/schedule"
	"github.com/logbench/logbench/internal/text"
)

// MaxMessageLength bounds a message kept in the status: a run's error, a destination's
// or a condition's message.
const MaxMessageLength = v1alpha1.MaxMessageLength

// Truncate bounds a message kept in the status.
func Truncate(message string) string {
	return text.Truncate(message, MaxMessageLength)
}

// Observation is what was seen of a benchmark's runs.
type Observation struct {
	// Planned lists every run of the benchmark in the order they execute (schedule.Plan),
	// and Seed is the seed that ordered them.
	Planned []results.RunKey
	Seed    int64
	// Finished holds the result of every run that ended, failed ones included.
	Finished map[results.RunKey]v1alpha1.RepeatResult
	// Destinations is the state of each destination's cluster; local runs have none.
	Destinations []v1alpha1.DestinationStatus
	// Current is the run executing or waiting for its cluster, if any.
	Current *results.RunKey
	// Phase is the phase while runs remain: Pending, Provisioning or Running.
	Phase v1alpha1.Phase
	// Done says no run will start any more: the phase becomes Succeeded, or Failed when a
	// run failed or never ran.
	Done bool
}

// Set rebuilds the status of benchmark from what was observed. The start time and the
// observed generation stay as they are; the completion time is set when the benchmark
// finishes, once.
func Set(benchmark *v1alpha1.LoggingBenchmark, observed Observation) {
	finished := map[results.RunKey]v1alpha1.RepeatResult{}
	for _, run := range observed.Planned {
		if result, done := observed.Finished[run]; done {
			finished[run] = result
		}
	}
	current := &benchmark.Status
	current.Results = results.Aggregate(&benchmark.Spec, finished)
	current.Summary = results.Summarize(current.Results)
	current.Knees = schedule.Knees(&benchmark.Spec, current.Results)
	schedule.MarkKnees(current.Results, current.Knees)
	current.Destinations = observed.Destinations
	failures := results.Failures(current.Results)
	current.Phase = observed.Phase
	if observed.Done {
		current.Phase = v1alpha1.PhaseSucceeded
		if len(failures) > 0 || len(finished) < len(observed.Planned) {
			current.Phase = v1alpha1.PhaseFailed
		}
	}
	current.Schedule = schedule.Of(observed.Planned, observed.Seed)
	current.Progress = v1alpha1.Progress{
		RunsDone:  int32(len(finished)),
		RunsTotal: int32(len(observed.Planned)),
		Text:      fmt.Sprintf("%d/%d", len(finished), len(observed.Planned)),
	}
	if run := observed.Current; run != nil {
		current.Progress.Current = run.String()
	}
	markCompletion(current)
	reason, message := degradation(failures, len(observed.Planned), current.Results)
	setConditions(benchmark, reason, message, destinationNotes(current.Phase, observed.Destinations))
}

// DropRepeats leaves the rows of a status with their aggregated figures only, as a
// benchmark's status in a cluster keeps them: each run's result is a LoggingBenchmarkRun
// of its own there, so that the status stays small however many runs it counts.
func DropRepeats(status *v1alpha1.LoggingBenchmarkStatus) {
	for i := range status.Results {
		status.Results[i].Repeats = nil
	}
}

// destinationNotes says, while runs remain, what each destination that is not ready
// waits for and why each failed one did, so that the Ready condition, which kubectl get
// shows, tells why the benchmark is not there yet.
func destinationNotes(phase v1alpha1.Phase, destinations []v1alpha1.DestinationStatus) string {
	if phase.IsFinished() {
		return ""
	}
	var notes []string
	for _, dest := range destinations {
		switch {
		case dest.Message == "":
		case dest.State == v1alpha1.DestinationFailed:
			notes = append(notes, fmt.Sprintf("destination %s failed: %s", dest.Name, dest.Message))
		case dest.State == v1alpha1.DestinationPending || dest.State == v1alpha1.DestinationProvisioning:
			notes = append(notes, fmt.Sprintf("destination %s: %s", dest.Name, dest.Message))
		}
	}
	return strings.Join(notes, "; ")
}

// SetInvalid records a spec that cannot run at all: the benchmark fails before any run.
func SetInvalid(benchmark *v1alpha1.LoggingBenchmark, invalid error) {
	Fail(benchmark, v1alpha1.ReasonInvalidSpec, invalid)
}

// Fail ends the benchmark as failed before its runs, with the Degraded reason and cause
// given.
func Fail(benchmark *v1alpha1.LoggingBenchmark, reason string, cause error) {
	current := &benchmark.Status
	current.Phase = v1alpha1.PhaseFailed
	current.Progress.RunsTotal = benchmark.Spec.RunsTotal()
	markCompletion(current)
	setConditions(benchmark, reason, Truncate(cause.Error()), "")
}

func markCompletion(current *v1alpha1.LoggingBenchmarkStatus) {
	if current.Phase.IsFinished() && current.CompletionTime == nil {
		now := metav1.Now()
		current.CompletionTime = &now
	}
}

// degradation returns the reason and message of the Degraded condition from the runs
// that failed (of total) and the rows whose records cannot all be right; the reason is
// empty when there is neither. Failed runs give the reason when there are both.
func degradation(failures []results.Failure, total int, rows []v1alpha1.Result) (reason, message string) {
	var accounting string
	if inconsistent := results.AccountingErrors(rows); len(inconsistent) > 0 {
		accounting = fmt.Sprintf("accounting errors in %s: more records arrived than the server can have emitted "+
			"(status.results[].records.accountingError)", strings.Join(inconsistent, ", "))
	}
	switch {
	case len(failures) > 0 && accounting != "":
		return v1alpha1.ReasonRunsFailed, Truncate(fmt.Sprintf("%d of %d runs failed; %s; first failure %s",
			len(failures), total, accounting, failures[0]))
	case len(failures) > 0:
		return v1alpha1.ReasonRunsFailed, Truncate(fmt.Sprintf("%d of %d runs failed; first %s",
			len(failures), total, failures[0]))
	case accounting != "":
		return v1alpha1.ReasonAccountingError, Truncate(accounting)
	}
	return "", ""
}

// SetBlocked records that nothing can run the benchmark for now, for a reason outside
// its spec (a reason constant of the API package): the phase stays, nothing progresses,
// and every condition says why.
func SetBlocked(benchmark *v1alpha1.LoggingBenchmark, reason, message string) {
	benchmark.Status.Phase = cmp.Or(benchmark.Status.Phase, v1alpha1.PhasePending)
	message = Truncate(message)
	for _, conditionType := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing,
		v1alpha1.ConditionComplete, v1alpha1.ConditionFailed} {
		setCondition(benchmark, conditionType, false, reason, message)
	}
	setCondition(benchmark, v1alpha1.ConditionDegraded, true, reason, message)
}

// setConditions derives the conditions from the phase and progress; degradedReason is
// empty when nothing failed and every count is consistent, and notes, empty or not, say
// what the destinations wait for (destinationNotes).
func setConditions(benchmark *v1alpha1.LoggingBenchmark, degradedReason, degradedMessage, notes string) {
	phase := benchmark.Status.Phase
	phaseReason := v1alpha1.PhaseReasons[phase]
	phaseMessage := fmt.Sprintf("%s: %s runs done", phase, benchmark.Status.Progress.Text)
	failedMessage := phaseMessage
	if phase == v1alpha1.PhaseFailed && degradedReason != "" {
		failedMessage = Truncate(phaseMessage + "; " + degradedMessage)
	}
	// Ready says why the benchmark is not ready: what it waits for, or why it failed.
	readyMessage := failedMessage
	if notes != "" {
		readyMessage = Truncate(phaseMessage + "; " + notes)
	}
	setCondition(benchmark, v1alpha1.ConditionReady, phase == v1alpha1.PhaseSucceeded, phaseReason, readyMessage)
	setCondition(benchmark, v1alpha1.ConditionProgressing, !phase.IsFinished(), phaseReason, phaseMessage)
	setCondition(benchmark, v1alpha1.ConditionComplete, phase == v1alpha1.PhaseSucceeded, phaseReason, phaseMessage)
	setCondition(benchmark, v1alpha1.ConditionFailed, phase == v1alpha1.PhaseFailed, phaseReason, failedMessage)
	if degradedReason == "" {
		setCondition(benchmark, v1alpha1.ConditionDegraded, false, v1alpha1.ReasonNoFailures,
			"no run or destination failed and every count is consistent")
	} else {
		setCondition(benchmark, v1alpha1.ConditionDegraded, true, degradedReason, degradedMessage)
	}
}

func setCondition(benchmark *v1alpha1.LoggingBenchmark, conditionType string, isTrue bool, reason, message string) {
	conditionStatus := metav1.ConditionFalse
	if isTrue {
		conditionStatus = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&benchmark.Status.Conditions, metav1.Condition{
		Type:               conditionType,
		Status:             conditionStatus,
		ObservedGeneration: benchmark.Generation,
		Reason:             reason,
		Message:            message,
	})
}
