package schedule

import (
	"fmt"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// ReachedMax is the reason of a knee whose ramp met no stop condition.
const ReachedMax = "reached ramp.max without meeting a stop condition"

// Knees returns where the ramp of each destination ended, from its result rows: the
// highest client count whose row met every bound, and the count and condition that
// stopped it. A destination whose ramp goes on has no knee yet, nor has any without a
// ramp. A row counts once all its repeats (and, for the overhead, the baseline's) ran.
func Knees(spec *v1alpha1.LoggingBenchmarkSpec, rows []v1alpha1.Result) []v1alpha1.Knee {
	ramp := spec.Workload.Ramp
	if ramp == nil {
		return nil
	}
	baseline := results.BaselineName(spec)
	counts := spec.Workload.ClientCounts()
	var knees []v1alpha1.Knee
	for _, dest := range spec.EffectiveDestinations() {
		if dest.Name == baseline {
			continue
		}
		var previous *v1alpha1.Result
		for i, clients := range counts {
			row := completeRow(spec, rows, dest.Name, clients)
			if row == nil {
				break
			}
			reason, known := rampStop(ramp.StopWhen, spec, rows, row, previous)
			if !known {
				break
			}
			if reason != "" {
				knee := v1alpha1.Knee{Destination: dest.Name, StoppedAt: clients, Reason: reason}
				if previous != nil {
					knee.Clients = previous.Clients
				}
				knees = append(knees, knee)
				break
			}
			if i == len(counts)-1 {
				knees = append(knees, v1alpha1.Knee{Destination: dest.Name, Clients: clients, Reason: ReachedMax})
			}
			previous = row
		}
	}
	return knees
}

// rampStop says which stop condition row meets, given the destination's row at the
// previous client count; "" when it meets none. A count whose runs all failed stops the
// ramp, as does a failed baseline when the overhead bounds it. It is not known while the
// baseline's runs at the count that the overhead needs have not all run.
func rampStop(
	stop v1alpha1.RampStopConditions, spec *v1alpha1.LoggingBenchmarkSpec,
	rows []v1alpha1.Result, row, previous *v1alpha1.Result,
) (reason string, known bool) {
	if len(results.Successful(row.Repeats)) == 0 {
		return fmt.Sprintf("every run at %d clients failed", row.Clients), true
	}
	var baseline *v1alpha1.Result
	if stop.OverheadAbovePercent != nil {
		if baseline = completeRow(spec, rows, results.BaselineName(spec), row.Clients); baseline == nil {
			return "", false
		}
	}
	return stopReason(stop, row, previous, baseline), true
}

// stopReason is the stop condition a row with successful runs meets, "" for none.
func stopReason(stop v1alpha1.RampStopConditions, row, previous, baseline *v1alpha1.Result) string {
	records := row.Records
	if stop.DroppedRecords {
		switch {
		case records.Dropped != nil && *records.Dropped > 0:
			return fmt.Sprintf("dropped %d records at %d clients", *records.Dropped, row.Clients)
		case records.DroppedAtLeast != nil && *records.DroppedAtLeast > 0:
			return fmt.Sprintf("dropped at least %d records at %d clients", *records.DroppedAtLeast, row.Clients)
		}
	}
	if bound := stop.OverheadAbovePercent; bound != nil {
		switch {
		case len(results.Successful(baseline.Repeats)) == 0 || row.OverheadPercent == nil:
			return fmt.Sprintf("no overhead at %d clients: the baseline's runs failed", row.Clients)
		case *row.OverheadPercent > float64(*bound):
			return fmt.Sprintf("overhead %.1f%% above %d%% at %d clients", *row.OverheadPercent, *bound, row.Clients)
		}
	}
	if bound := stop.TPSGainBelowPercent; bound != nil && previous != nil && previous.TPS > 0 {
		gain := (row.TPS/previous.TPS - 1) * 100
		if gain < float64(*bound) {
			return fmt.Sprintf("TPS went from %.0f at %d clients to %.0f at %d (%+.1f%%), a gain below %d%%",
				previous.TPS, previous.Clients, row.TPS, row.Clients, gain, *bound)
		}
	}
	return ""
}

// completeRow is the row of destination at clients once every repeat of it ran.
func completeRow(
	spec *v1alpha1.LoggingBenchmarkSpec, rows []v1alpha1.Result, destination string, clients int32,
) *v1alpha1.Result {
	for i := range rows {
		if row := &rows[i]; row.Destination == destination && row.Clients == clients {
			if len(row.Repeats) < int(spec.Workload.Repeats) {
				return nil
			}
			return row
		}
	}
	return nil
}

// MarkKnees marks each destination's knee row and the row that stopped its ramp.
func MarkKnees(rows []v1alpha1.Result, knees []v1alpha1.Knee) {
	for _, knee := range knees {
		for i := range rows {
			row := &rows[i]
			if row.Destination != knee.Destination {
				continue
			}
			row.Knee = row.Clients == knee.Clients
			if row.Clients == knee.StoppedAt {
				row.RampStop = knee.Reason
			}
		}
	}
}
