package controllers

import (
	"maps"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/version"
)

// The labels that name the benchmark of every logbench series, and a result's
// destination.
const (
	metricLabelNamespace   = "namespace"
	metricLabelDestination = "destination"
	metricLabelBenchmark   = "benchmark"
	metricLabelStage       = "stage"
	metricLabelType        = "type"
)

// Metrics the operator exports on its metrics endpoint, beside controller-runtime's own.
var (
	resultLabels = []string{metricLabelNamespace, metricLabelBenchmark, metricLabelDestination, metricLabelType, "clients"}

	resultTPS = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_tps",
		Help: "Transactions per second of a result row (destination and client count), aggregated over its repeats.",
	}, resultLabels)
	resultLatency = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_latency_avg_ms",
		Help: "Average transaction latency of a result row, in milliseconds.",
	}, resultLabels)
	resultOverhead = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_overhead_percent",
		Help: "TPS lost against the baseline at the same client count, in percent; absent without a baseline.",
	}, resultLabels)
	resultOverheadLow = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_overhead_low_percent",
		Help: "Lower bound of the confidence interval of the overhead; absent with fewer than 3 repeat pairs.",
	}, resultLabels)
	resultOverheadHigh = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_overhead_high_percent",
		Help: "Upper bound of the confidence interval of the overhead; absent with fewer than 3 repeat pairs.",
	}, resultLabels)
	resultOverheadSignificant = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_overhead_significant",
		Help: "1 when the overhead's interval excludes 0, 0 when the overhead is within noise; absent without an interval.",
	}, resultLabels)
	resultRecordsExpected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_expected",
		Help: "Statement log records PostgreSQL had to emit for a result row.",
	}, resultLabels)
	resultRecordsDelivered = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_delivered",
		Help: "Statement log records of a result row counted at the destination.",
	}, resultLabels)
	resultRecordsDropped = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_dropped",
		Help: "Statement log records of a result row that never reached the destination; absent when the count is not exact.",
	}, resultLabels)
	resultRecordsDroppedAtLeast = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_dropped_at_least",
		Help: "Statement log records of a result row known to be lost below the lower bound of an estimated count; " +
			"absent unless some are.",
	}, resultLabels)
	resultRecordsUnverified = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_unverified",
		Help: "Statement log records of a result row that logbench could not see (a rotation of the container log " +
			"under its stream); never counted as dropped.",
	}, resultLabels)
	resultRecordsDuplicates = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_duplicates",
		Help: "Statement log records of a result row stored more than once beyond the first copy, at least; " +
			"they never offset dropped records.",
	}, resultLabels)
	resultRecordsDuplicatesExact = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_duplicates_exact",
		Help: "1 when a result row's duplicates were counted by each stored record's identity, 0 when they are " +
			"a lower bound; absent for rows whose pipeline logbench does not count by stage.",
	}, resultLabels)
	resultRecordsArrivedLate = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_arrived_late",
		Help: "Statement log records of a result row that reached the destination after its drain ended.",
	}, resultLabels)
	resultDrain = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_drain_seconds",
		Help: "Seconds from the end of pgbench until the destination held the last record of a result row.",
	}, resultLabels)
	resultLogBytesPerRecord = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_log_bytes_per_record",
		Help: "Bytes the server wrote to the destination's log files per record of a result row's runs, " +
			"its own records included; absent where logbench reads no file.",
	}, resultLabels)
	resultLogGigabytesPerHour = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_log_gigabytes_per_hour",
		Help: "Log bytes of a result row's runs extrapolated to an hour at their rate, in GB (10^9 bytes); " +
			"absent where logbench reads no file.",
	}, resultLabels)
	resultServerCPUCores = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_server_cpu_cores",
		Help: "CPU cores the server (its processes locally, its postgres container in a cluster) used while " +
			"pgbench ran, median of a result row's repeats; absent where not measured.",
	}, resultLabels)
	resultServerCPUPerTransactions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_server_cpu_ms_per_1k_transactions",
		Help: "CPU milliseconds the server used per 1,000 transactions, median of a result row's repeats; " +
			"absent where not measured.",
	}, resultLabels)
	resultServerPeakMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_server_peak_memory_bytes",
		Help: "Most memory the server held while pgbench ran (shared buffers counted once), highest of a " +
			"result row's repeats; absent where not measured.",
	}, resultLabels)
	resultShipperCPUCores = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_shipper_cpu_cores",
		Help: "CPU cores a shipping destination's sidecar used from the start of pgbench to the end of the drain, " +
			"median of a result row's repeats; absent for other destinations.",
	}, resultLabels)
	resultShipperCPUPerRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_shipper_cpu_ms_per_1k_records",
		Help: "CPU milliseconds the sidecar used per 1,000 records the server wrote, median of a result row's " +
			"repeats; absent for other destinations.",
	}, resultLabels)
	resultShipperPeakMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_shipper_peak_memory_bytes",
		Help: "Most memory the sidecar held (shared pages counted once), highest of a result row's repeats; " +
			"absent for other destinations.",
	}, resultLabels)
	resultReceiverCPUCores = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_receiver_cpu_cores",
		Help: "CPU cores a forwarding Syslog destination's receiver pod used over the same time as its sidecar, " +
			"median of a result row's repeats; absent for other destinations.",
	}, resultLabels)
	resultReceiverCPUPerRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_receiver_cpu_ms_per_1k_records",
		Help: "CPU milliseconds the receiver pod used per 1,000 records the server wrote, median of a result " +
			"row's repeats; absent for other destinations.",
	}, resultLabels)
	resultReceiverPeakMemory = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_receiver_peak_memory_bytes",
		Help: "Most memory the receiver pod held (shared pages counted once), highest of a result row's repeats; " +
			"absent for other destinations.",
	}, resultLabels)
	resultAccountingError = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_accounting_error",
		Help: "1 when the records of a result row do not add up (more arrived than the server can have emitted), " +
			"so that its record counts are not to be trusted; 0 otherwise.",
	}, resultLabels)
	resultRecordsAtStage = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_result_records_at_stage",
		Help: "Records of a result row counted at each stage of its pipeline (containerLog, written, read, sent, " +
			"stored), for rows whose stages are counted: shipping destinations and Stdout destinations counted in " +
			"their node agent's Loki.",
	}, append(slices.Clone(resultLabels), metricLabelStage))
	kneeClients = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_knee_clients",
		Help: "Highest client count at which a destination met every bound of its ramp (spec.workload.ramp); " +
			"0 when its first count did not; absent until its ramp ends.",
	}, []string{metricLabelNamespace, metricLabelBenchmark, metricLabelDestination})
	destinationInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_destination_info",
		Help: "1 for each destination of a benchmark, with its type and effective logging settings " +
			"(spec.logging with the destination's own over it, e.g. statement=all,duration=on) as labels, " +
			"to join onto the result series by destination.",
	}, []string{metricLabelNamespace, metricLabelBenchmark, metricLabelDestination, metricLabelType, "logging"})
	runsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "logbench_runs_total",
		Help: "Benchmark runs (pgbench executions) this operator process saw finish, by outcome (succeeded or failed).",
	}, []string{metricLabelNamespace, metricLabelBenchmark, "outcome"})
	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_build_info",
		Help: "1, labelled with the release and the git commit the operator was built from.",
	}, []string{"version", "commit"})
	benchmarkPhase = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "logbench_benchmark_phase",
		Help: "1 for the current phase of a benchmark, 0 for the others.",
	}, []string{metricLabelNamespace, metricLabelBenchmark, "phase"})

	resultGauges = []*prometheus.GaugeVec{
		resultTPS, resultLatency, resultOverhead, resultOverheadLow, resultOverheadHigh, resultOverheadSignificant,
		resultRecordsExpected,
		resultRecordsDelivered, resultRecordsDropped, resultRecordsDroppedAtLeast, resultRecordsUnverified,
		resultRecordsDuplicates, resultRecordsDuplicatesExact,
		resultRecordsArrivedLate, resultDrain, resultLogBytesPerRecord, resultLogGigabytesPerHour,
		resultAccountingError, resultServerCPUCores, resultServerCPUPerTransactions, resultServerPeakMemory,
		resultShipperCPUCores, resultShipperCPUPerRecords, resultShipperPeakMemory, resultRecordsAtStage,
		resultReceiverCPUCores, resultReceiverCPUPerRecords, resultReceiverPeakMemory,
	}
	phases = []v1alpha1.Phase{
		v1alpha1.PhasePending, v1alpha1.PhaseProvisioning, v1alpha1.PhaseRunning,
		v1alpha1.PhaseSucceeded, v1alpha1.PhaseFailed,
	}
)

const (
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
)

func init() {
	metrics.Registry.MustRegister(operatorCollectors()...)
	build := version.Get()
	buildInfo.WithLabelValues(build.Version, build.Commit).Set(1)
}

// operatorCollectors are every metric the operator serves.
func operatorCollectors() []prometheus.Collector {
	collectors := make([]prometheus.Collector, 0, 5+len(resultGauges))
	collectors = append(collectors, runsTotal, benchmarkPhase, kneeClients, destinationInfo, buildInfo)
	for _, gauge := range resultGauges {
		collectors = append(collectors, gauge)
	}
	return collectors
}

// exportBenchmarkMetrics sets the phase and result series of a benchmark. Rows never
// disappear from a benchmark's status, so only optional figures may need deleting.
func exportBenchmarkMetrics(benchmark *v1alpha1.LoggingBenchmark) {
	for _, phase := range phases {
		value := 0.0
		if benchmark.Status.Phase == phase {
			value = 1
		}
		benchmarkPhase.WithLabelValues(benchmark.Namespace, benchmark.Name, string(phase)).Set(value)
	}
	// The spec is immutable: a destination's settings, and so its series, never change.
	for _, d := range benchmark.Spec.EffectiveDestinations() {
		destinationInfo.WithLabelValues(benchmark.Namespace, benchmark.Name, d.Name, string(d.Type),
			benchmark.Spec.LoggingSettings(d)).Set(1)
	}
	for _, knee := range benchmark.Status.Knees {
		kneeClients.WithLabelValues(benchmark.Namespace, benchmark.Name, knee.Destination).Set(float64(knee.Clients))
	}
	for _, row := range benchmark.Status.Results {
		labels := prometheus.Labels{
			metricLabelNamespace:   benchmark.Namespace,
			metricLabelBenchmark:   benchmark.Name,
			metricLabelDestination: row.Destination,
			metricLabelType:        string(row.Type),
			"clients":              strconv.Itoa(int(row.Clients)),
		}
		resultTPS.With(labels).Set(row.TPS)
		resultLatency.With(labels).Set(row.LatencyAvgMs)
		resultRecordsExpected.With(labels).Set(float64(row.Records.Expected))
		resultRecordsDelivered.With(labels).Set(float64(row.Records.Delivered))
		resultRecordsArrivedLate.With(labels).Set(float64(row.Records.ArrivedLate))
		resultRecordsUnverified.With(labels).Set(float64(row.Records.Unverified))
		resultRecordsDuplicates.With(labels).Set(float64(row.Records.Duplicates))
		var duplicatesExact *float64
		if stages := row.Records.Stages; stages != nil {
			duplicatesExact = new(gaugeFlag(stages.DuplicatesExact))
		}
		setOptional(resultRecordsDuplicatesExact, labels, duplicatesExact)
		resultDrain.With(labels).Set(row.DrainSeconds)
		resultAccountingError.With(labels).Set(gaugeFlag(row.Records.AccountingError != ""))
		setOptional(resultOverhead, labels, row.OverheadPercent)
		setOptional(resultLogBytesPerRecord, labels, row.LogBytesPerRecord)
		setOptional(resultLogGigabytesPerHour, labels, row.LogGigabytesPerHour)
		setOptional(resultServerCPUCores, labels, row.ServerCPUCores)
		setOptional(resultServerCPUPerTransactions, labels, row.ServerCPUMsPer1kTransactions)
		setOptional(resultServerPeakMemory, labels, asFloat(row.ServerPeakMemoryBytes))
		setOptional(resultShipperCPUCores, labels, row.ShipperCPUCores)
		setOptional(resultShipperCPUPerRecords, labels, row.ShipperCPUMsPer1kRecords)
		setOptional(resultShipperPeakMemory, labels, asFloat(row.ShipperPeakMemoryBytes))
		setOptional(resultReceiverCPUCores, labels, row.ReceiverCPUCores)
		setOptional(resultReceiverCPUPerRecords, labels, row.ReceiverCPUMsPer1kRecords)
		setOptional(resultReceiverPeakMemory, labels, asFloat(row.ReceiverPeakMemoryBytes))
		var low, high, significant *float64
		if interval := row.OverheadInterval; interval != nil {
			low, high = &interval.LowPercent, &interval.HighPercent
			significant = new(gaugeFlag(row.OverheadVerdict == v1alpha1.OverheadSignificant))
		}
		setOptional(resultOverheadLow, labels, low)
		setOptional(resultOverheadHigh, labels, high)
		setOptional(resultOverheadSignificant, labels, significant)
		setOptional(resultRecordsDropped, labels, asFloat(row.Records.Dropped))
		setOptional(resultRecordsDroppedAtLeast, labels, asFloat(row.Records.DroppedAtLeast))
		exportStages(labels, row.Records.Stages)
	}
}

// exportStages sets the records of each counted stage of a row, and deletes the series of
// stages it does not count.
func exportStages(row prometheus.Labels, stages *v1alpha1.RecordStages) {
	if stages == nil {
		stages = &v1alpha1.RecordStages{}
	}
	for _, stage := range stages.Pipeline() {
		labels := maps.Clone(row)
		labels[metricLabelStage] = stage.Name
		setOptional(resultRecordsAtStage, labels, asFloat(stage.Count))
	}
}

// gaugeFlag is a yes-or-no gauge's value: 1 or 0.
func gaugeFlag(set bool) float64 {
	if set {
		return 1
	}
	return 0
}

func asFloat(count *int64) *float64 {
	if count == nil {
		return nil
	}
	return new(float64(*count))
}

// setOptional exports a figure a row may lack, such as the overhead without a baseline.
func setOptional(gauge *prometheus.GaugeVec, labels prometheus.Labels, value *float64) {
	if value == nil {
		gauge.Delete(labels)
		return
	}
	gauge.With(labels).Set(*value)
}

// countRun counts a finished run of benchmark with its outcome.
func countRun(benchmark *v1alpha1.LoggingBenchmark, outcome string) {
	runsTotal.WithLabelValues(benchmark.Namespace, benchmark.Name, outcome).Inc()
}

// forgetBenchmarkMetrics deletes every series of a deleted benchmark.
func forgetBenchmarkMetrics(namespace, name string) {
	owner := prometheus.Labels{metricLabelNamespace: namespace, metricLabelBenchmark: name}
	for _, gauge := range resultGauges {
		gauge.DeletePartialMatch(owner)
	}
	runsTotal.DeletePartialMatch(owner)
	kneeClients.DeletePartialMatch(owner)
	destinationInfo.DeletePartialMatch(owner)
	benchmarkPhase.DeletePartialMatch(owner)
}
