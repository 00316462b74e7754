package v1alpha1

// Condition types of a LoggingBenchmark.
const (
	// ConditionReady is True once every run succeeded.
	ConditionReady = "Ready"
	// ConditionProgressing is True while clusters are provisioned or runs execute.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a run or a destination failed, a count cannot be
	// right, or the spec is unusable.
	ConditionDegraded = "Degraded"
	// ConditionComplete is True once the benchmark succeeded, and ConditionFailed once it
	// failed: the condition types of a batch Job, so that scripts wait for a benchmark as
	// for a Job (kubectl wait --for=condition=Complete lbench/NAME).
	ConditionComplete = "Complete"
	ConditionFailed   = "Failed"
)

// Reasons of the Ready, Progressing, Complete and Failed conditions, one per phase.
const (
	ReasonPending             = "Pending"
	ReasonProvisioningCluster = "ProvisioningCluster"
	ReasonRunningBenchmark    = "RunningBenchmark"
	ReasonBenchmarkSucceeded  = "BenchmarkSucceeded"
	ReasonBenchmarkFailed     = "BenchmarkFailed"
)

// Reasons of the Degraded condition.
const (
	ReasonInvalidSpec     = "InvalidSpec"
	ReasonRunsFailed      = "RunsFailed"
	ReasonAccountingError = "AccountingError"
	ReasonNoFailures      = "NoFailures"
	// ReasonCloudNativePGUnavailable: the API server serves no CloudNativePG Cluster the
	// operator can drive, so no benchmark can run until a supported CloudNativePG is
	// installed. Every condition of a benchmark that has not finished carries it.
	ReasonCloudNativePGUnavailable = "CloudNativePGUnavailable"

	// ReasonForeignObject: an object the benchmark needs (the agent's ServiceAccount or
	// RoleBinding, a shipper ConfigMap) exists and is not logbench's; logbench does not
	// take it over.
	ReasonForeignObject = "ForeignObject"

	// ReasonNotAllowed: the benchmark names an image or a placement (toleration, node
	// selector, affinity, storage class) the cluster administrator has not allowed; the
	// operator refuses it before creating anything, as the admission policy would.
	ReasonNotAllowed = "NotAllowed"
)

// PhaseReasons gives the reason of the Ready and Progressing conditions in each phase.
var PhaseReasons = map[Phase]string{
	PhasePending:      ReasonPending,
	PhaseProvisioning: ReasonProvisioningCluster,
	PhaseRunning:      ReasonRunningBenchmark,
	PhaseSucceeded:    ReasonBenchmarkSucceeded,
	PhaseFailed:       ReasonBenchmarkFailed,
}

// IsFinished reports whether a benchmark in this phase runs nothing more.
func (p Phase) IsFinished() bool {
	return p == PhaseSucceeded || p == PhaseFailed
}
