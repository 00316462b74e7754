// Package results aggregates the runs of a benchmark into its result rows, their
// overheads and a summary, and compares two benchmarks' rows: it makes the rows that
// internal/schedule's ramp reads and internal/report renders. Everything here is pure: it
// neither reads the cluster nor the clock, so the controller and the local runner produce
// the same rows from the same runs.
package results

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/text"
)

// RunKey identifies one pgbench execution of a benchmark.
type RunKey struct {
	Destination string
	Clients     int32
	Repeat      int32
}

// String names the run as destination/clients/repeat.
func (k RunKey) String() string {
	return fmt.Sprintf("%s/%d/%d", k.Destination, k.Clients, k.Repeat)
}

// ParseRunKey reads a run named as String names it, as status.progress.current does.
func ParseRunKey(name string) (RunKey, error) {
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		return RunKey{}, fmt.Errorf("run %q is not destination/clients/repeat", name)
	}
	clients, errClients := strconv.ParseInt(parts[1], 10, 32)
	repeat, errRepeat := strconv.ParseInt(parts[2], 10, 32)
	if err := errors.Join(errClients, errRepeat); err != nil {
		return RunKey{}, fmt.Errorf("run %q: %w", name, err)
	}
	return RunKey{Destination: parts[0], Clients: int32(clients), Repeat: int32(repeat)}, nil
}

// Aggregate combines the repeats of every (destination, client count) into one row.
// Rows follow spec.EffectiveDestinations() and then spec.Workload.ClientCounts() order; a pair
// without any run yet has no row. Runs of destinations or client counts the spec does not
// list are ignored.
func Aggregate(spec *v1alpha1.LoggingBenchmarkSpec, runs map[RunKey]v1alpha1.RepeatResult) []v1alpha1.Result {
	var rows []v1alpha1.Result
	for _, dest := range spec.EffectiveDestinations() {
		for _, clients := range spec.Workload.ClientCounts() {
			repeats := repeatsOf(runs, dest.Name, clients)
			if len(repeats) == 0 {
				continue
			}
			row := aggregateRow(dest, clients, repeats, spec.Workload)
			row.Logging = text.Truncate(spec.LoggingSettings(dest), v1alpha1.MaxRowTextLength)
			rows = append(rows, row)
		}
	}
	applyOverheads(rows, func(destination string) string { return ReferenceOf(spec, destination) })
	return rows
}

// Summarize returns the figures kubectl get shows: the worst overhead of any row, and
// the records dropped over all rows, exact, lower-bound and unknown drops apart. Rows
// without a successful repeat have no records to count.
func Summarize(rows []v1alpha1.Result) v1alpha1.Summary {
	var summary v1alpha1.Summary
	var worst *float64
	var exactRows, boundRows int
	for _, row := range rows {
		if row.OverheadPercent != nil && (worst == nil || *row.OverheadPercent > *worst) {
			worst = row.OverheadPercent
		}
		if len(Successful(row.Repeats)) == 0 {
			continue
		}
		summary.UnverifiedRecords += row.Records.Unverified
		summary.DuplicateRecords += row.Records.Duplicates
		switch counted := row.Records; {
		case counted.Dropped != nil:
			summary.DroppedRecords += *counted.Dropped
			exactRows++
		case counted.DroppedAtLeast != nil && counted.AccountingError == "":
			summary.DroppedAtLeast += *counted.DroppedAtLeast
			boundRows++
		}
		if row.Records.Dropped == nil && (row.Records.DroppedAtLeast == nil || row.Records.AccountingError != "") {
			summary.DropsUnknown = append(summary.DropsUnknown, RowName(row))
		}
	}
	if worst != nil {
		summary.WorstOverhead = fmt.Sprintf("%.1f%%", *worst)
	}
	summary.Dropped = droppedText(summary, exactRows, boundRows)
	summary.Noise = NoiseText(rows)
	return summary
}

// droppedText is the summary's drops in one cell: "120", "≥300", "120 + ≥300",
// "120, 1 row unknown".
func droppedText(summary v1alpha1.Summary, exactRows, boundRows int) string {
	var known []string
	if exactRows > 0 {
		known = append(known, strconv.FormatInt(summary.DroppedRecords, 10))
	}
	if boundRows > 0 {
		known = append(known, "≥"+strconv.FormatInt(summary.DroppedAtLeast, 10))
	}
	cell := strings.Join(known, " + ")
	if unknown := len(summary.DropsUnknown); unknown > 0 {
		rows := "rows"
		if unknown == 1 {
			rows = "row"
		}
		cell = strings.TrimPrefix(fmt.Sprintf("%s, %d %s unknown", cell, unknown, rows), ", ")
	}
	return cell
}

// RowName names a row as destination/clients.
func RowName(row v1alpha1.Result) string {
	return fmt.Sprintf("%s/%d", row.Destination, row.Clients)
}

// AccountingErrors lists the rows whose records cannot all be right, as
// destination/clients.
func AccountingErrors(rows []v1alpha1.Result) []string {
	var inconsistent []string
	for _, row := range rows {
		if row.Records.AccountingError != "" {
			inconsistent = append(inconsistent, RowName(row))
		}
	}
	return inconsistent
}

// BaselineName is the destination of type None placed as the workload among the
// effective destinations, or "" when the benchmark has no baseline.
func BaselineName(spec *v1alpha1.LoggingBenchmarkSpec) string {
	return noneAt(spec, spec.Workload.Placement)
}

// ReferenceOf is the destination the overheads of the named one are measured against:
// the destination of type None placed as it is, so that where the client runs weighs on
// both sides of the comparison alike; "" when there is none.
func ReferenceOf(spec *v1alpha1.LoggingBenchmarkSpec, destination string) string {
	for _, dest := range spec.EffectiveDestinations() {
		if dest.Name == destination {
			return noneAt(spec, spec.PlacementOf(dest))
		}
	}
	return ""
}

// noneAt is the effective destination of type None with the placement, or "".
func noneAt(spec *v1alpha1.LoggingBenchmarkSpec, placement v1alpha1.Placement) string {
	for _, dest := range spec.EffectiveDestinations() {
		if dest.Type == v1alpha1.DestinationNone && spec.PlacementOf(dest) == placement {
			return dest.Name
		}
	}
	return ""
}

// repeatsOf returns the runs of one destination at one client count in repeat order.
// The key's repeat index is authoritative: it overwrites the index inside the result.
func repeatsOf(runs map[RunKey]v1alpha1.RepeatResult, destination string, clients int32) []v1alpha1.RepeatResult {
	var repeats []v1alpha1.RepeatResult
	for key, run := range runs {
		if key.Destination == destination && key.Clients == clients {
			run.Repeat = key.Repeat
			repeats = append(repeats, boundRun(run))
		}
	}
	slices.SortFunc(repeats, func(a, b v1alpha1.RepeatResult) int { return cmp.Compare(a.Repeat, b.Repeat) })
	return repeats
}

// boundRun cuts the free text of a run to the status's bounds: an agent composes it from
// what the shipper, Loki and the kubelet said, and a Job's result annotation is anyone's
// to write who may edit Jobs. Stages and the sampler's check are copied, not changed in
// place, since runs share them with the map they come from.
func boundRun(run v1alpha1.RepeatResult) v1alpha1.RepeatResult {
	run.Error = text.Truncate(run.Error, v1alpha1.MaxMessageLength)
	run.ClientNode = text.Truncate(run.ClientNode, v1alpha1.MaxNodeNameLength)
	run.ServerNode = text.Truncate(run.ServerNode, v1alpha1.MaxNodeNameLength)
	counted := &run.Records
	for _, reason := range []*string{&counted.DropReason, &counted.UnverifiedReason, &counted.AccountingError} {
		*reason = text.Truncate(*reason, v1alpha1.MaxRunReasonLength)
	}
	if counted.Sampler != nil {
		sampler := *counted.Sampler
		sampler.Message = text.Truncate(sampler.Message, v1alpha1.MaxRunReasonLength)
		counted.Sampler = &sampler
	}
	if counted.Stages != nil {
		stages := *counted.Stages
		stages.LostAt = text.Truncate(stages.LostAt, v1alpha1.MaxStageNameLength)
		stages.UnverifiedAt = text.Truncate(stages.UnverifiedAt, v1alpha1.MaxStageNameLength)
		counted.Stages = &stages
	}
	return run
}

// Successful returns the repeats that produced a measurement, in their original order.
func Successful(repeats []v1alpha1.RepeatResult) []v1alpha1.RepeatResult {
	var ok []v1alpha1.RepeatResult
	for _, r := range repeats {
		if r.Error == "" {
			ok = append(ok, r)
		}
	}
	return ok
}

func aggregateRow(
	dest v1alpha1.Destination,
	clients int32,
	repeats []v1alpha1.RepeatResult,
	workload v1alpha1.WorkloadSpec,
) v1alpha1.Result {
	how := workload.Aggregate
	row := v1alpha1.Result{
		Destination: dest.Name,
		Type:        dest.Type,
		Clients:     clients,
		Repeats:     repeats,
	}
	ok := Successful(repeats)
	if len(ok) == 0 {
		return row
	}
	tps := make([]float64, len(ok))
	for i, r := range ok {
		tps[i] = r.TPS
		row.DrainSeconds = max(row.DrainSeconds, r.DrainSeconds)
	}
	chosen := chooseRepeat(ok, how)
	row.TPS = chosen.TPS
	if how != v1alpha1.AggregateBest {
		row.TPS = median(tps)
	}
	row.LatencyAvgMs = chosen.LatencyAvgMs
	row.LatencyStdDevMs = chosen.LatencyStdDevMs
	mean, stddev := meanAndSampleStdDev(tps)
	row.TPSStdDev = stddev
	if mean != 0 {
		row.TPSCoefficientOfVariation = stddev / mean * 100
	}
	row.Noisy = len(ok) > 1 && row.TPSCoefficientOfVariation > v1alpha1.NoisyCVPercent
	row.Records = sumRecords(ok)
	row.LogBytesPerRecord, row.LogGigabytesPerHour = logVolume(ok, workload.Duration.Duration)
	row.ServerCPUCores, row.ServerCPUMsPer1kTransactions, row.ServerPeakMemoryBytes = processCost(ok,
		func(r v1alpha1.RepeatResult) *v1alpha1.ProcessUsage { return r.Server },
		func(r v1alpha1.RepeatResult) int64 { return r.Transactions })
	// The shipper handles every record the server writes, delivered or not, and so does
	// the receiver it forwards them to, but for those lost on the way.
	written := func(r v1alpha1.RepeatResult) int64 { return r.Records.Expected }
	row.ShipperCPUCores, row.ShipperCPUMsPer1kRecords, row.ShipperPeakMemoryBytes = processCost(ok,
		func(r v1alpha1.RepeatResult) *v1alpha1.ProcessUsage { return r.Shipper }, written)
	row.ReceiverCPUCores, row.ReceiverCPUMsPer1kRecords, row.ReceiverPeakMemoryBytes = processCost(ok,
		func(r v1alpha1.RepeatResult) *v1alpha1.ProcessUsage { return r.Receiver }, written)
	return row
}

// processCost is the median of the repeats' CPU of the processes usage picks, per second
// and per 1,000 of the units the repeat counts, and the highest of their memory peaks;
// nil where no repeat measured it for sure.
func processCost(
	ok []v1alpha1.RepeatResult, usage func(v1alpha1.RepeatResult) *v1alpha1.ProcessUsage,
	units func(v1alpha1.RepeatResult) int64,
) (cores, msPer1kUnits *float64, peakMemory *int64) {
	var perSecond, perUnits []float64
	for _, r := range ok {
		measured := usage(r)
		if measured == nil {
			continue
		}
		// A repeat whose CPU time is unknown counts in neither median.
		if cpu := measured.CPUSeconds; cpu != nil && measured.WallSeconds > 0 {
			perSecond = append(perSecond, *cpu/measured.WallSeconds)
		}
		if cpu, n := measured.CPUSeconds, units(r); cpu != nil && n > 0 {
			perUnits = append(perUnits, *cpu*1e3/(float64(n)/1e3))
		}
		if peak := measured.PeakMemoryBytes; peak != nil && (peakMemory == nil || *peak > *peakMemory) {
			peakMemory = peak
		}
	}
	if len(perSecond) > 0 {
		cores = new(median(perSecond))
	}
	if len(perUnits) > 0 {
		msPer1kUnits = new(median(perUnits))
	}
	return cores, msPer1kUnits, peakMemory
}

// logVolume is the log bytes of the repeats per record the server wrote for the run,
// and extrapolated to GB an hour over their pgbench durations; nil without repeats that
// measured log bytes or, for bytes per record, without records.
func logVolume(ok []v1alpha1.RepeatResult, duration time.Duration) (perRecord, gigabytesPerHour *float64) {
	var bytes, written int64
	var measured int
	for _, r := range ok {
		if r.LogBytes == nil {
			continue
		}
		measured++
		bytes += *r.LogBytes
		if stages := r.Records.Stages; stages != nil && stages.Written != nil {
			written += *stages.Written
		} else {
			written += r.Records.Delivered + r.Records.ArrivedLate
		}
	}
	if measured == 0 || duration <= 0 {
		return nil, nil
	}
	perHour := float64(bytes) / (float64(measured) * duration.Hours()) / 1e9
	if written == 0 {
		return nil, &perHour
	}
	size := float64(bytes) / float64(written)
	return &size, &perHour
}

// chooseRepeat picks the repeat whose latencies represent the row. For Best it is the
// repeat with the highest TPS. For Median it is the middle repeat by TPS; with an even
// count the median is the mean of the two middle repeats, both equally near it, and the
// lower of the two is taken so that latencies are never flattered. Ties keep repeat order.
func chooseRepeat(ok []v1alpha1.RepeatResult, how v1alpha1.Aggregate) v1alpha1.RepeatResult {
	byTPS := func(a, b v1alpha1.RepeatResult) int { return cmp.Compare(a.TPS, b.TPS) }
	if how == v1alpha1.AggregateBest {
		return slices.MaxFunc(ok, byTPS)
	}
	sorted := slices.Clone(ok)
	slices.SortStableFunc(sorted, byTPS)
	return sorted[(len(sorted)-1)/2]
}

func median(values []float64) float64 {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[mid]
	}
	return (sorted[mid-1] + sorted[mid]) / 2
}

// meanAndSampleStdDev uses n-1: the repeats are a sample of the runs one could make.
func meanAndSampleStdDev(values []float64) (mean, stddev float64) {
	for _, v := range values {
		mean += v
	}
	mean /= float64(len(values))
	if len(values) < 2 {
		return mean, 0
	}
	var squares float64
	for _, v := range values {
		squares += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(squares / float64(len(values)-1))
}

// sumRecords adds up the records of successful repeats. Dropped is only summed when every
// repeat counted it exactly and consistently: a sum with a gap in it, or with the
// negative dropped of a repeat that delivered more than it could, would understate the
// loss. Otherwise the drops known, exactly or at least, of the consistent repeats make
// a lower bound, zero included when every repeat has one (duplicates make a drop "at
// least"). Accounting errors and drop reasons are kept per repeat: each explains
// its own, and the row's join of them is cut to MaxRowTextLength.
func sumRecords(ok []v1alpha1.RepeatResult) v1alpha1.Records {
	var total v1alpha1.Records
	var knownDropped int64
	exact, bounded := true, true
	var accountingErrors, dropReasons, unverifiedReasons []string
	for _, r := range ok {
		total.Expected += r.Records.Expected
		total.Delivered += r.Records.Delivered
		total.ArrivedLate += r.Records.ArrivedLate
		total.Duplicates += r.Records.Duplicates
		total.Unverified += r.Records.Unverified
		if r.Records.UnverifiedReason != "" {
			unverifiedReasons = append(unverifiedReasons, fmt.Sprintf("repeat %d: %s", r.Repeat, r.Records.UnverifiedReason))
		}
		total.ExpectedIsEstimate = total.ExpectedIsEstimate || r.Records.ExpectedIsEstimate
		total.ExpectedSource = rowSource(total.ExpectedSource, r.Records.ExpectedSource)
		if r.Records.AccountingError != "" {
			exact = false
			accountingErrors = append(accountingErrors, fmt.Sprintf("repeat %d: %s", r.Repeat, r.Records.AccountingError))
		} else {
			exact = exact && r.Records.Dropped != nil
			bounded = bounded && (r.Records.Dropped != nil || r.Records.DroppedAtLeast != nil)
			knownDropped += r.Records.KnownDropped()
		}
		if r.Records.DropReason != "" {
			dropReasons = append(dropReasons, fmt.Sprintf("repeat %d: %s", r.Repeat, r.Records.DropReason))
		}
	}
	switch {
	case exact:
		total.Dropped = &knownDropped
	case knownDropped > 0 || bounded:
		total.DroppedAtLeast = &knownDropped
	}
	total.Stages = sumStages(ok, total.ExactExpected())
	total.AccountingError = text.Truncate(strings.Join(accountingErrors, "; "), v1alpha1.MaxRowTextLength)
	// A reason holds "; " between its parts, so repeats are set apart with " | ".
	total.DropReason = text.Truncate(strings.Join(dropReasons, " | "), v1alpha1.MaxRowTextLength)
	total.UnverifiedReason = text.Truncate(strings.Join(unverifiedReasons, " | "), v1alpha1.MaxRowTextLength)
	total.Sampler = sumSampler(ok, total)
	return total
}

// rowSource is where a row's expected records come from, given the row's so far and a
// further repeat's: counted at the source only when every repeat's were, and results
// written before the source was recorded were predicted.
func rowSource(row, repeat v1alpha1.ExpectedSource) v1alpha1.ExpectedSource {
	if repeat != v1alpha1.ExpectedCounted || row == v1alpha1.ExpectedPredicted {
		return v1alpha1.ExpectedPredicted
	}
	return v1alpha1.ExpectedCounted
}

// sumSampler adds up the repeats' bounds on what CloudNativePG's sampler received and
// judges the sum against the row's records, when every repeat could bound it.
func sumSampler(ok []v1alpha1.RepeatResult, total v1alpha1.Records) *v1alpha1.SamplerCheck {
	var sum v1alpha1.SamplerCheck
	for _, r := range ok {
		check := r.Records.Sampler
		switch {
		case check == nil:
			return nil
		case check.Verdict == v1alpha1.SamplerUnknown:
			return &v1alpha1.SamplerCheck{Verdict: v1alpha1.SamplerUnknown,
				Message: text.Truncate(fmt.Sprintf("repeat %d: %s", r.Repeat, check.Message), v1alpha1.MaxRowTextLength)}
		}
		sum.ReceivedMin += check.ReceivedMin
		sum.ReceivedMax += check.ReceivedMax
		sum.Windows += check.Windows
	}
	judged := records.JudgeSampler(sum,
		records.Expectation{Records: total.Expected, Estimate: total.ExpectedIsEstimate}, total.Delivered)
	return &judged
}

// sumStages adds up the stage counts of the repeats, each stage when every repeat
// counted it: a sum with a gap in it would show a loss that did not happen. exactExpected
// is the repeats' expected records when exact, nil otherwise.
func sumStages(ok []v1alpha1.RepeatResult, exactExpected *int64) *v1alpha1.RecordStages {
	if len(ok) == 0 {
		return nil
	}
	var total v1alpha1.RecordStages
	for _, r := range ok {
		if r.Records.Stages == nil {
			return nil
		}
		total.InputPausedSeconds += r.Records.Stages.InputPausedSeconds
	}
	sumStage := func(stage func(*v1alpha1.RecordStages) *int64) *int64 {
		var sum int64
		for _, r := range ok {
			count := stage(r.Records.Stages)
			if count == nil {
				return nil
			}
			sum += *count
		}
		return &sum
	}
	total.ContainerLog = sumStage(func(s *v1alpha1.RecordStages) *int64 { return s.ContainerLog })
	total.Written = sumStage(func(s *v1alpha1.RecordStages) *int64 { return s.Written })
	total.Read = sumStage(func(s *v1alpha1.RecordStages) *int64 { return s.Read })
	total.Forwarded = sumStage(func(s *v1alpha1.RecordStages) *int64 { return s.Forwarded })
	total.Received = sumStage(func(s *v1alpha1.RecordStages) *int64 { return s.Received })
	total.Sent = sumStage(func(s *v1alpha1.RecordStages) *int64 { return s.Sent })
	total.Stored = sumStage(func(s *v1alpha1.RecordStages) *int64 { return s.Stored })
	// The row's duplicates are exact when every repeat counted them by identity.
	total.DuplicatesExact = true
	for _, r := range ok {
		total.Duplicates += r.Records.Stages.Duplicates
		total.DuplicatesExact = total.DuplicatesExact && r.Records.Stages.DuplicatesExact
		total.Unverified += r.Records.Stages.Unverified
		total.UnverifiedAt = cmp.Or(total.UnverifiedAt, r.Records.Stages.UnverifiedAt)
	}
	total.LostAt = total.LosingStage(exactExpected)
	return &total
}

// Failure is a repeat that failed, named as destination/clients/repeat.
type Failure struct {
	Run   RunKey
	Error string
}

func (f Failure) String() string {
	return f.Run.String() + ": " + f.Error
}

// Failures lists the failed repeats of the rows in row order, the one list every count
// and message of failed runs comes from.
func Failures(rows []v1alpha1.Result) []Failure {
	var failures []Failure
	for _, row := range rows {
		for _, repeat := range row.Repeats {
			if repeat.Error != "" {
				run := RunKey{Destination: row.Destination, Clients: row.Clients, Repeat: repeat.Repeat}
				failures = append(failures, Failure{Run: run, Error: repeat.Error})
			}
		}
	}
	return failures
}

// ScriptSummary is one script of a run of several over a row's successful repeats.
type ScriptSummary struct {
	Key v1alpha1.ConfigMapKey
	// TPS and LatencyAvgMs are medians over the repeats, Transactions their sum.
	TPS, LatencyAvgMs float64
	Transactions      int64
}

// Scripts summarises each script of the row's successful repeats that report theirs, in
// the files' order, and sums those repeats' own transactions, which the scripts'
// transactions can fall short of (v1alpha1.ScriptResult).
func Scripts(row v1alpha1.Result) (scripts []ScriptSummary, runTransactions int64) {
	// gathered is a script's summary so far and the figures of its repeats.
	type gathered struct {
		ScriptSummary
		tps, latency []float64
	}
	var inOrder []*gathered
	byKey := map[v1alpha1.ConfigMapKey]*gathered{}
	for _, repeat := range Successful(row.Repeats) {
		if len(repeat.Scripts) == 0 {
			continue
		}
		runTransactions += repeat.Transactions
		for _, script := range repeat.Scripts {
			g := byKey[script.Key]
			if g == nil {
				g = &gathered{ScriptSummary: ScriptSummary{Key: script.Key}}
				byKey[script.Key] = g
				inOrder = append(inOrder, g)
			}
			g.Transactions += script.Transactions
			g.tps = append(g.tps, script.TPS)
			g.latency = append(g.latency, script.LatencyAvgMs)
		}
	}
	for _, g := range inOrder {
		g.TPS, g.LatencyAvgMs = median(g.tps), median(g.latency)
		scripts = append(scripts, g.ScriptSummary)
	}
	return scripts, runTransactions
}
