package v1alpha1

// WorkloadScripts are the user's own pgbench scripts, run instead of a builtin. Their
// statements are the user's, so no model predicts the records they log: they need a
// count at the source (CounterExtension). They run as the cluster's application owner
// (CloudNativePG's <cluster>-app Secret), never as the superuser; locally, as the user
// running logbench.
// +kubebuilder:validation:XValidation:rule="!has(self.init) || self.files.all(f, f.key != self.init)",message="scripts.init runs once before the runs, not as one of the files: give it a key of its own"
type WorkloadScripts struct {
	// ConfigMap holds the scripts, in the benchmark's namespace; locally, a ConfigMap
	// given in the same file as the benchmark. A run's pod mounts the keys listed here,
	// read-only; the operator never reads it.
	ConfigMap ConfigMapReference `json:"configMap"`

	// Files are the scripts, each a key of the ConfigMap, run as pgbench -f key@weight:
	// each transaction runs one of them, drawn in proportion to the weights. Every
	// session carries the run's tag as its application_name, which is how the run's
	// records are counted: a script must not change application_name.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=key
	Files []ScriptFile `json:"files"`

	// Init is the key of a SQL file run once per cluster before its first run, in one
	// transaction (no COMMIT in it, nothing that cannot run in a transaction), to create
	// what the scripts use. Its sha256 is recorded in the table logbench_init of the
	// app database in the same transaction: a retried or later run finds it done, and a
	// changed init runs again. Its records carry no run's tag. pgbench -i is not run
	// with scripts.
	// +optional
	Init ConfigMapKey `json:"init,omitempty"`
}

// ScriptFile is one pgbench script of WorkloadScripts.
type ScriptFile struct {
	// Key of the script in the ConfigMap.
	Key ConfigMapKey `json:"key"`

	// Weight is the script's share of the transactions, against the other files'.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Weight int32 `json:"weight,omitempty"`
}

// ConfigMapReference names a ConfigMap in the benchmark's namespace.
type ConfigMapReference struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// ConfigMapKey is a key of a ConfigMap's data as Kubernetes accepts one: letters,
// digits, '-', '_' and '.', not starting with "..", and not ".".
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
// +kubebuilder:validation:XValidation:rule="self != '.' && !self.startsWith('..')",message="a ConfigMap key may not be '.' or start with '..'"
type ConfigMapKey string

// Keys are the ConfigMap's keys the scripts use: the files', then the init's when set.
func (s *WorkloadScripts) Keys() []ConfigMapKey {
	keys := make([]ConfigMapKey, 0, len(s.Files)+1)
	for _, file := range s.Files {
		keys = append(keys, file.Key)
	}
	if s.Init != "" {
		keys = append(keys, s.Init)
	}
	return keys
}

// ScriptResult is one script's share of a run of several, as pgbench reports it. With
// more than one thread (workload.threads) pgbench adds the scripts' figures up without a
// lock, and may miss a few transactions: the scripts' transactions can then fall short of
// the run's, which the report says.
type ScriptResult struct {
	// Key of the script in the ConfigMap.
	Key ConfigMapKey `json:"key"`
	// Transactions the script processed successfully.
	Transactions int64 `json:"transactions"`
	// FailedTransactions of the script (serialization or deadlock errors not retried).
	// +optional
	FailedTransactions int64 `json:"failedTransactions,omitempty"`
	// TPS of the script's transactions, without the initial connection time.
	TPS float64 `json:"tps"`
	// LatencyAvgMs of the script's transactions.
	LatencyAvgMs float64 `json:"latencyAvgMs"`
	// LatencyStdDevMs of the script's transactions; absent where pgbench printed NaN (a
	// variance its unlocked sums left below zero).
	// +optional
	LatencyStdDevMs *float64 `json:"latencyStdDevMs,omitempty"`
}
