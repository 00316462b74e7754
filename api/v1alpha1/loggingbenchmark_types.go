package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LoggingBenchmarkSpec describes one benchmark: which PostgreSQL servers to create, what
// they log, where the logs go, and which pgbench workload measures the cost.
// +kubebuilder:validation:XValidation:rule="!self.baseline.enabled || self.destinations.all(d, d.name != 'baseline' || (d.type == 'None' && (!has(d.placement) || d.placement == self.workload.placement)))",message="the destination name 'baseline' is reserved for the automatic baseline; rename it or set baseline.enabled: false"
// +kubebuilder:validation:XValidation:rule="['Apart', 'SameNode', 'Anywhere'].all(p, self.destinations.filter(d, d.type == 'None' && (has(d.placement) ? d.placement : self.workload.placement) == p).size() <= 1)",message="at most one destination of type None (a baseline) per placement"
// +kubebuilder:validation:XValidation:rule="!(self.baseline.enabled || self.destinations.exists(d, d.type == 'None')) || self.destinations.all(d, !has(d.placement) || d.placement == self.workload.placement || self.destinations.exists(r, r.type == 'None' && has(r.placement) && r.placement == d.placement))",message="a destination placed otherwise than spec.workload.placement needs a destination of type None with the same placement: its overhead is measured against a baseline placed as it is"
// +kubebuilder:validation:XValidation:rule="!has(self.workload.ramp) || self.destinations.all(d, !has(d.placement))",message="a ramp measures every destination against one baseline: leave placement out of the destinations, or compare placements at fixed clients"
// +kubebuilder:validation:XValidation:rule="!has(self.workload.ramp) || !has(self.workload.ramp.stopWhen) || !has(self.workload.ramp.stopWhen.overheadAbovePercent) || self.baseline.enabled || self.destinations.exists(d, d.type == 'None')",message="ramp.stopWhen.overheadAbovePercent needs the baseline to measure overhead against: enable it or list a destination of type None"
// The status holds a result row per destination and client count, and each run's result
// is a LoggingBenchmarkRun of its own: MaxRows bounds the rows so that the largest status
// stays under 1 MiB (etcd refuses an object above 1.5 MiB, and every later status write
// with it), and MaxRuns the runs. A ramp runs at most 11 client counts by factor (1 to
// 1000 doubling), its rounds by step.
// +kubebuilder:validation:XValidation:rule="(self.destinations.size() + (self.baseline.enabled && !self.destinations.exists(d, d.type == 'None' && (!has(d.placement) || d.placement == self.workload.placement)) ? 1 : 0)) * (!has(self.workload.ramp) ? self.workload.clients.size() : has(self.workload.ramp.step) ? (self.workload.ramp.max - self.workload.ramp.start) / self.workload.ramp.step + 1 : 11) <= 150",message="too many result rows for one status: destinations (the baseline included) × client counts must be at most 150; split the benchmark"
// +kubebuilder:validation:XValidation:rule="(self.destinations.size() + (self.baseline.enabled && !self.destinations.exists(d, d.type == 'None' && (!has(d.placement) || d.placement == self.workload.placement)) ? 1 : 0)) * (!has(self.workload.ramp) ? self.workload.clients.size() : has(self.workload.ramp.step) ? (self.workload.ramp.max - self.workload.ramp.start) / self.workload.ramp.step + 1 : 11) * self.workload.repeats <= 1000",message="too many runs: destinations (the baseline included) × client counts × repeats must be at most 1000; split the benchmark"
type LoggingBenchmarkSpec struct {
	// Postgres describes every benchmark cluster.
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="postgres is immutable; create a new LoggingBenchmark to change it"
	Postgres PostgresSpec `json:"postgres,omitempty"`

	// Logging is what the server logs in every destination except the baseline.
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="logging is immutable; create a new LoggingBenchmark to change it"
	Logging LoggingSpec `json:"logging,omitempty"`

	// Destinations are the logging destinations to compare; each gets its own cluster.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=12
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="destinations are immutable; create a new LoggingBenchmark to change them"
	Destinations []Destination `json:"destinations"`

	// Baseline controls the automatic no-logging baseline.
	// +kubebuilder:default={enabled: true}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="baseline is immutable; create a new LoggingBenchmark to change it"
	Baseline BaselineSpec `json:"baseline,omitempty"`

	// Workload is the pgbench workload run against every destination.
	// +kubebuilder:default={}
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workload is immutable; create a new LoggingBenchmark to change it"
	Workload WorkloadSpec `json:"workload,omitempty"`

	// DrainTimeout bounds the wait, after pgbench ends, for the destination to hold the
	// last record of the run.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="drainTimeout must be between 0s and 1h"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="drainTimeout is immutable; create a new LoggingBenchmark to change it"
	DrainTimeout metav1.Duration `json:"drainTimeout,omitempty"`

	// ClusterReadyTimeout bounds the wait for each destination's cluster to become
	// ready, the operator's --cluster-ready-timeout when unset: a cluster not ready by
	// then fails its destination with the reason, and the other destinations go on.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="clusterReadyTimeout must be between 1s and 24h"
	ClusterReadyTimeout *metav1.Duration `json:"clusterReadyTimeout,omitempty"`

	// PodStartTimeout bounds the wait for a pod of the benchmark (a cluster's instance or
	// initdb Job, a run's runner, a syslog receiver) whose container cannot start without
	// a change of the cluster (an image pull that fails, a missing Secret) or that no node
	// takes: past it the destination, or the run, fails with the kubelet's or the
	// scheduler's reason. An image that does not exist fails at once. Unset, 2m: time for
	// the kubelet to retry a pull, a Secret to be created late or a node to be added.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="podStartTimeout must be between 1s and 24h"
	PodStartTimeout *metav1.Duration `json:"podStartTimeout,omitempty"`

	// Cleanup says what happens to the benchmark clusters when the benchmark ends.
	// It may change after creation, as may clusterReadyTimeout and podStartTimeout; every
	// other field may not.
	// +kubebuilder:default=OnSuccess
	Cleanup CleanupPolicy `json:"cleanup,omitempty"`
}

// CleanupPolicy says when the benchmark clusters are deleted.
// +kubebuilder:validation:Enum=Always;OnSuccess;Never
type CleanupPolicy string

const (
	CleanupAlways    CleanupPolicy = "Always"
	CleanupOnSuccess CleanupPolicy = "OnSuccess"
	CleanupNever     CleanupPolicy = "Never"
)

// PostgresSpec describes the CloudNativePG cluster created for each destination.
// PostgreSQL parameter names are case-insensitive, hence lowerAscii. Names and values
// are written into postgresql.conf: names must follow its grammar (ParameterNamePattern),
// values are ParameterValues, and parameters that run a shell command, load code or
// point the server at other files or hosts (UnsafeParameters) are refused whatever
// CloudNativePG accepts; ValidateConfigurationInput checks the same in the operator and
// in local mode.
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.parameters.all(k, k.matches('^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*)?$'))",message="parameter names must be PostgreSQL parameter names: a letter or _, then letters, digits or _, with at most one . before an extension's own name (auto_explain.log_min_duration); no spaces or other characters"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.parameters.all(k, !(k.lowerAscii() in ['archive_cleanup_command', 'archive_command', 'archive_library', 'config_file', 'data_directory', 'dynamic_library_path', 'extension_control_path', 'external_pid_file', 'hba_file', 'ident_file', 'jit_provider', 'krb_server_keyfile', 'local_preload_libraries', 'primary_conninfo', 'recovery_end_command', 'restore_command', 'session_preload_libraries', 'shared_preload_libraries', 'ssl_ca_file', 'ssl_cert_file', 'ssl_crl_dir', 'ssl_crl_file', 'ssl_dh_params_file', 'ssl_key_file', 'ssl_passphrase_command']))",message="parameters that run a shell command, load code, or point the server at other files or hosts (archive_command, restore_command, archive_cleanup_command, recovery_end_command, ssl_passphrase_command, shared_preload_libraries, session_preload_libraries, local_preload_libraries, dynamic_library_path, extension_control_path, archive_library, jit_provider, data_directory, config_file, hba_file, ident_file, external_pid_file, krb_server_keyfile, ssl_*_file, ssl_crl_dir, primary_conninfo) are refused: a benchmark needs none of them"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.parameters.all(k, !(k.lowerAscii() in ['log_destination', 'logging_collector', 'log_directory', 'log_filename', 'log_truncate_on_rotation', 'log_file_mode', 'event_source']) && !k.lowerAscii().startsWith('log_rotation_') && !k.lowerAscii().startsWith('syslog_'))",message="logging destination parameters (log_destination, logging_collector, log_directory, log_filename, log_rotation_*, log_truncate_on_rotation, log_file_mode, syslog_*) are set by logbench per destination: use spec.destinations"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.parameters.all(k, !(k.lowerAscii() in ['log_statement', 'log_min_duration_statement', 'log_duration', 'log_line_prefix', 'track_io_timing', 'application_name', 'log_connections', 'log_disconnections']))",message="statement logging parameters (log_statement, log_min_duration_statement, log_duration, log_line_prefix, track_io_timing, application_name, log_connections, log_disconnections) are set by logbench: use spec.logging"
// Parameters that add records to a run's sessions (or remove them) would make the
// expected count wrong: they are refused here; spec.logging sets those logbench models
// or counts at the source.
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.parameters.all(k, !(k.lowerAscii() in ['log_statement_stats', 'log_parser_stats', 'log_planner_stats', 'log_executor_stats', 'log_transaction_sample_rate', 'log_statement_sample_rate', 'log_min_duration_sample', 'log_lock_waits', 'log_lock_failures', 'log_temp_files', 'log_min_error_statement', 'log_btree_build_stats']) && !k.lowerAscii().startsWith('debug_print_') && !k.lowerAscii().startsWith('trace_') && !k.lowerAscii().startsWith('auto_explain.') && !k.lowerAscii().startsWith('pgaudit.'))",message="parameters that add log records to the benchmark's sessions (log_*_stats, log_transaction_sample_rate, log_statement_sample_rate, log_min_duration_sample, log_lock_waits, log_lock_failures, log_temp_files, log_min_error_statement, debug_print_*, trace_*, auto_explain.*, pgaudit.*) would make the expected record count wrong: logbench refuses them; what it can predict is in spec.logging, and spec.logging's minDurationSample, statementSampleRate, transactionSampleRate, autoExplain, lockWaits and tempFiles set the others where the server counts their records itself (logbench_counter)"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.parameters.all(k, k.lowerAscii() != 'log_min_messages' || self.parameters[k] in ['warning', 'error', 'log', 'WARNING', 'ERROR', 'LOG'])",message="log_min_messages may be warning, error or log: lower levels add records to the benchmark's sessions and fatal or panic drop the statement records, so logbench could not predict them; what it can predict is in spec.logging"
// +kubebuilder:validation:XValidation:rule="!has(self.parameters) || self.parameters.all(k, k.lowerAscii() != 'lc_messages' || self.parameters[k] in ['C', 'POSIX', 'en'] || self.parameters[k].startsWith('C.') || self.parameters[k].startsWith('en_') || self.parameters[k].startsWith('en.'))",message="lc_messages must be C, POSIX or an English locale: logbench's stderr counter reads PostgreSQL's untranslated labels (DETAIL, STATEMENT, ...); see spec.logging"
type PostgresSpec struct {
	// ImageName is the PostgreSQL operand image; empty means CloudNativePG's default.
	// The image must contain pgbench (the official CloudNativePG images do).
	// +optional
	ImageName string `json:"imageName,omitempty"`

	// Instances per cluster.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	Instances int32 `json:"instances,omitempty"`

	// Storage of each instance.
	// +kubebuilder:default={}
	Storage StorageSpec `json:"storage,omitempty"`

	// Resources of each PostgreSQL instance.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Parameters are passed to CloudNativePG's spec.postgresql.parameters. Logging
	// parameters are rejected here: they belong to spec.logging and spec.destinations.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Parameters map[string]ParameterValue `json:"parameters,omitempty"`

	// NodeSelector for the instance pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations for the instance pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity for the instance pods (CloudNativePG's additionalPodAffinity and
	// additionalPodAntiAffinity, and nodeAffinity).
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// InstanceManagerLogLevel is CloudNativePG's log level of the instance manager (the
	// Cluster's spec.logLevel); empty leaves CloudNativePG's default, info. Up to 1.30.0
	// the instance manager samples the csvlog records it prints on stdout at info and
	// above (cloudnative-pg issue #10815); debug measures the workaround.
	// +optional
	InstanceManagerLogLevel InstanceManagerLogLevel `json:"instanceManagerLogLevel,omitempty"`

	// Counter loads the logbench_counter extension into the servers, which then count
	// the records they log for each run; the logging settings no model predicts need it.
	// Without it, expected records are predicted, and those settings are refused.
	// +optional
	Counter *CounterSpec `json:"counter,omitempty"`
}

// ParameterValue is the value of a PostgreSQL parameter, written into postgresql.conf as
// a quoted value: what could end the value or the line there is refused
// (ValidateConfigurationInput checks the same). Its maxLength bounds the cost of the
// rule, which the API server refuses to run unbounded.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:XValidation:rule="!self.matches(r\"[\\p{Cc}\\\\']\")",message="parameter values must hold no control characters (newlines, tabs), backslashes or single quotes: they are written into postgresql.conf as quoted values"
type ParameterValue string

// InstanceManagerLogLevel is a log level of CloudNativePG's instance manager.
// +kubebuilder:validation:Enum=error;warning;info;debug;trace
type InstanceManagerLogLevel string

// StorageSpec is the persistent volume of each instance.
type StorageSpec struct {
	// omitzero: a Go client that leaves Size unset sends nothing and gets the default,
	// instead of sending "0".

	// Size of the volume.
	// +optional
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage size must be greater than 0"
	Size resource.Quantity `json:"size,omitzero"`

	// StorageClass of the volume; empty means the cluster default.
	// +optional
	StorageClass *string `json:"storageClass,omitempty"`
}

// StatementLogging is PostgreSQL's log_statement.
// +kubebuilder:validation:Enum=none;ddl;mod;all
type StatementLogging string

const (
	StatementNone StatementLogging = "none"
	StatementDDL  StatementLogging = "ddl"
	StatementMod  StatementLogging = "mod"
	StatementAll  StatementLogging = "all"
)

// LoggingSpec is what PostgreSQL logs in every non-baseline destination.
type LoggingSpec struct {
	// Statement is log_statement.
	// +kubebuilder:default=all
	Statement StatementLogging `json:"statement,omitempty"`

	// MinDurationStatement is log_min_duration_statement in milliseconds; -1 turns it off.
	// Values above 0 make the expected record count an estimate, unless the server counts
	// the records itself (logbench_counter).
	// +kubebuilder:default=-1
	// +kubebuilder:validation:Minimum=-1
	MinDurationStatement *int32 `json:"minDurationStatement,omitempty"`

	// Duration is log_duration.
	// +optional
	Duration bool `json:"duration,omitempty"`

	// Connections is log_connections: one "connection authorized" record per session,
	// which names the run's application_name and so counts as the run's (pgbench opens
	// one session per client and one of its own before them).
	// +optional
	Connections bool `json:"connections,omitempty"`

	// Disconnections is log_disconnections: one "disconnection" record per session.
	// +optional
	Disconnections bool `json:"disconnections,omitempty"`

	// TrackIOTiming is track_io_timing.
	// +optional
	TrackIOTiming bool `json:"trackIOTiming,omitempty"`

	// Pgaudit turns on pgaudit's session audit logging for every destination but the
	// baseline, which runs without the extension. CloudNativePG loads pgaudit and creates
	// the extension when a pgaudit.* parameter is set; its operand images ship it, and
	// locally the installation must have it (Debian: postgresql-15-pgaudit).
	// +optional
	Pgaudit *PgauditSpec `json:"pgaudit,omitempty"`

	// LinePrefix is log_line_prefix. It must contain %a (the application name, by which
	// logbench recognises the records of a run in the plain stderr format).
	// +kubebuilder:default="%m [%p] %q%u@%d %a "
	LinePrefix LinePrefix `json:"linePrefix,omitempty"`

	// The settings below log records no model can predict (a random sample, the plans of
	// slow statements, lock waits, temporary files): only the server's own count knows
	// how many, so each needs the logbench_counter extension loaded in the server, which
	// counts every record at the source. logbench run --local loads it; in a cluster the
	// operator refuses them until logbench's PostgreSQL images ship it.

	// MinDurationSample is log_min_duration_sample in milliseconds: statements at least
	// this slow are logged, with their duration, at statementSampleRate; -1 turns it off.
	// Needs logbench_counter.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	MinDurationSample *int32 `json:"minDurationSample,omitempty"`

	// StatementSampleRate is log_statement_sample_rate: the share, 0 to 1, of the
	// statements past minDurationSample that are logged (without minDurationSample it
	// samples nothing). Needs logbench_counter.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	StatementSampleRate *float64 `json:"statementSampleRate,omitempty"`

	// TransactionSampleRate is log_transaction_sample_rate: the share, 0 to 1, of
	// transactions whose every statement is logged with its duration. Needs
	// logbench_counter.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	TransactionSampleRate *float64 `json:"transactionSampleRate,omitempty"`

	// AutoExplain loads auto_explain, which logs the plan of every statement at least
	// autoExplain.minDuration slow, a record of its own. Needs logbench_counter.
	// +optional
	AutoExplain *AutoExplainSpec `json:"autoExplain,omitempty"`

	// LockWaits is log_lock_waits: a record when a session has waited deadlock_timeout
	// (spec.postgres.parameters) for a lock, and another when it gets the lock. Needs
	// logbench_counter.
	// +optional
	LockWaits bool `json:"lockWaits,omitempty"`

	// TempFiles is log_temp_files in kilobytes: a record for each temporary file at least
	// this large, when it is deleted; 0 logs every one, -1 turns it off. Needs
	// logbench_counter.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	TempFiles *int32 `json:"tempFiles,omitempty"`
}

// AutoExplainSpec is auto_explain's logging of plans: one record per statement at least
// minDuration slow, besides what the other settings log.
type AutoExplainSpec struct {
	// MinDuration is auto_explain.log_min_duration in milliseconds; 0 logs the plan of
	// every statement.
	// +kubebuilder:validation:Minimum=0
	MinDuration int32 `json:"minDuration"`

	// Analyze is auto_explain.log_analyze: the plans hold EXPLAIN ANALYZE's measured rows
	// and times; the server then instruments every statement, a cost of its own.
	// +optional
	Analyze bool `json:"analyze,omitempty"`

	// Buffers is auto_explain.log_buffers: buffer usage, with analyze.
	// +optional
	Buffers bool `json:"buffers,omitempty"`

	// Verbose is auto_explain.log_verbose: EXPLAIN VERBOSE's output columns and names.
	// +optional
	Verbose bool `json:"verbose,omitempty"`

	// NestedStatements is auto_explain.log_nested_statements: the statements run inside
	// functions are explained too.
	// +optional
	NestedStatements bool `json:"nestedStatements,omitempty"`

	// Format is auto_explain.log_format.
	// +kubebuilder:default=text
	Format AutoExplainFormat `json:"format,omitempty"`

	// SampleRate is auto_explain.sample_rate: the share, 0 to 1, of each session's
	// statements that are explained; unset explains all of them.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	SampleRate *float64 `json:"sampleRate,omitempty"`
}

// AutoExplainFormat is the format of auto_explain's plans.
// +kubebuilder:validation:Enum=text;xml;json;yaml
type AutoExplainFormat string

// LinePrefix is log_line_prefix, written into postgresql.conf as a quoted value: what
// could end the value or the line there is refused (ValidateConfigurationInput checks
// the same).
// +kubebuilder:validation:MaxLength=256
// +kubebuilder:validation:XValidation:rule="self.contains('%a')",message="linePrefix must contain %a: logbench recognises the records of a run by their application name"
// +kubebuilder:validation:XValidation:rule="!self.matches(r\"[\\p{Cc}\\\\']\")",message="linePrefix must hold no control characters (newlines, tabs), backslashes or single quotes: it is written into postgresql.conf as a quoted value"
type LinePrefix string

// PgauditSpec is pgaudit's session audit logging: one AUDIT record per audited statement,
// besides what log_statement logs.
type PgauditSpec struct {
	// Log is pgaudit.log: the classes of statements audited. pgbench's builtin workloads
	// run read (SELECT), write (UPDATE, INSERT) and misc (BEGIN, END) statements.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=set
	Log []PgauditClass `json:"log"`

	// LogParameter is pgaudit.log_parameter: each record also holds the statement's
	// parameters, which makes records longer, not more.
	// +optional
	LogParameter bool `json:"logParameter,omitempty"`

	// LogRelation is pgaudit.log_relation: a record per relation a statement reads or
	// writes instead of one per statement (the builtin workloads' statements each touch
	// one relation).
	// +optional
	LogRelation bool `json:"logRelation,omitempty"`
}

// PgauditClass is a class of statements pgaudit audits.
// +kubebuilder:validation:Enum=read;write;function;role;ddl;misc;misc_set;all
type PgauditClass string

const (
	PgauditRead     PgauditClass = "read"
	PgauditWrite    PgauditClass = "write"
	PgauditFunction PgauditClass = "function"
	PgauditRole     PgauditClass = "role"
	PgauditDDL      PgauditClass = "ddl"
	PgauditMisc     PgauditClass = "misc"
	PgauditMiscSet  PgauditClass = "misc_set"
	PgauditAll      PgauditClass = "all"
)

// DestinationType is where PostgreSQL's log records go.
// +kubebuilder:validation:Enum=None;Stdout;Stderr;CSVLog;JSONLog;FluentBitSidecar;Loki;Syslog
type DestinationType string

const (
	// DestinationNone is the baseline: statement logging off.
	DestinationNone DestinationType = "None"
	// DestinationStdout is CloudNativePG's own pipeline to the container log
	// (locally: the server's stderr piped into logbench).
	DestinationStdout DestinationType = "Stdout"
	// DestinationStderr is stderr-format files written by the logging collector.
	DestinationStderr DestinationType = "Stderr"
	// DestinationCSVLog is csvlog files written by the logging collector.
	DestinationCSVLog DestinationType = "CSVLog"
	// DestinationJSONLog is jsonlog files written by the logging collector.
	DestinationJSONLog DestinationType = "JSONLog"
	// DestinationFluentBitSidecar ships log files with a Fluent Bit sidecar, to Null,
	// Stdout or Loki.
	DestinationFluentBitSidecar DestinationType = "FluentBitSidecar"
	// DestinationLoki ships log files to a remote Loki with a Fluent Bit or OpenTelemetry
	// Collector sidecar.
	DestinationLoki DestinationType = "Loki"
	// DestinationSyslog is PostgreSQL's syslog(): records go to /dev/log, where a Fluent
	// Bit receiver counts them (in a cluster, a sidecar that may forward them to a
	// receiver Service; locally, logbench itself).
	DestinationSyslog DestinationType = "Syslog"
)

// DestinationTypes lists every destination type, in the order of the Enum marker above.
var DestinationTypes = []DestinationType{
	DestinationNone, DestinationStdout, DestinationStderr, DestinationCSVLog, DestinationJSONLog,
	DestinationFluentBitSidecar, DestinationLoki, DestinationSyslog,
}

// LogFormat is the PostgreSQL log format used by a Stdout destination.
// +kubebuilder:validation:Enum=CSVLog;Stderr;JSONLog
type LogFormat string

const (
	FormatCSVLog  LogFormat = "CSVLog"
	FormatStderr  LogFormat = "Stderr"
	FormatJSONLog LogFormat = "JSONLog"
	// FormatSyslog is what a Syslog destination carries: PostgreSQL's syslog messages.
	// No format field admits it: the destination's type says it.
	FormatSyslog LogFormat = "Syslog"
)

// Destination is one logging destination to measure.
// +kubebuilder:validation:XValidation:rule="!has(self.format) || self.type == 'Stdout'",message="format applies only to destinations of type Stdout"
// +kubebuilder:validation:XValidation:rule="!has(self.shipper) || self.type in ['FluentBitSidecar', 'Loki', 'Syslog']",message="shipper applies only to destinations of type FluentBitSidecar, Loki and Syslog"
// +kubebuilder:validation:XValidation:rule="!(self.type in ['FluentBitSidecar', 'Syslog']) || !has(self.shipper) || !has(self.shipper.kind) || self.shipper.kind == 'FluentBit'",message="FluentBitSidecar and Syslog destinations ship with Fluent Bit: set shipper.kind FluentBit or leave it out"
// +kubebuilder:validation:XValidation:rule="self.type != 'Loki' || !has(self.shipper) || !has(self.shipper.output) || self.shipper.output == 'Loki'",message="a Loki destination always ships to Loki: leave shipper.output out"
// +kubebuilder:validation:XValidation:rule="self.type == 'Stdout' || has(self.loki) == (self.type == 'Loki' || (self.type in ['FluentBitSidecar', 'Syslog'] && has(self.shipper) && has(self.shipper.output) && self.shipper.output == 'Loki'))",message="loki is required by Loki destinations and by FluentBitSidecar and Syslog destinations with shipper.output Loki, optional for Stdout destinations (the Loki their node agent ships to), and applies to no other destination"
// +kubebuilder:validation:XValidation:rule="!has(self.loki) || !has(self.loki.selector) || self.type == 'Stdout'",message="loki.selector applies only to Stdout destinations: a shipper labels its own records"
// +kubebuilder:validation:XValidation:rule="self.type != 'Stdout' || !has(self.loki) || !has(self.loki.labels)",message="loki.labels label a shipper's records; a Stdout destination's records are labelled by the platform's node agent: select them with loki.selector"
// +kubebuilder:validation:XValidation:rule="!has(self.containerLog) || (self.type == 'Stdout' && has(self.loki))",message="containerLog applies only to Stdout destinations counted in Loki"
// +kubebuilder:validation:XValidation:rule="!has(self.syslog) || self.type == 'Syslog'",message="syslog applies only to destinations of type Syslog"
// +kubebuilder:validation:XValidation:rule="!has(self.syslog) || !has(self.syslog.receiver) || self.syslog.receiver != 'Rsyslog' || !has(self.shipper) || !has(self.shipper.output)",message="the Rsyslog receiver writes a file in which logbench counts the records: leave shipper.output out"
// +kubebuilder:validation:XValidation:rule="!has(self.logging) || self.type != 'None'",message="a destination of type None is the baseline and logs nothing: it cannot take logging settings; give them to a destination of another type"
type Destination struct {
	// Name identifies the destination; it is part of the cluster's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Type of the destination.
	Type DestinationType `json:"type"`

	// Format of the records a Stdout destination carries; CSVLog (CloudNativePG's
	// default) when empty.
	// +optional
	Format LogFormat `json:"format,omitempty"`

	// Shipper is the sidecar that carries the records of a FluentBitSidecar or Loki
	// destination out of the instance pod; its defaults apply when it is left out.
	// +optional
	Shipper *ShipperSpec `json:"shipper,omitempty"`

	// Loki is where a Loki destination, or a FluentBitSidecar destination with output
	// Loki, sends its records. For a Stdout destination it is the Loki the platform's own
	// node agent (a Fluent Bit or OpenTelemetry Collector DaemonSet, Promtail, Alloy)
	// ships the container log to: the run's records are counted there too, and logbench
	// deploys nothing for it.
	// +optional
	Loki *LokiSpec `json:"loki,omitempty"`

	// ContainerLog says whether a Stdout destination counted in Loki also counts its
	// records in the container log the kubelet holds: Count (the default) tells the
	// kubelet's losses from those of the node agent and Loki; Skip spares the API server a
	// log stream as fast as the server logs.
	// +optional
	ContainerLog ContainerLogCounting `json:"containerLog,omitempty"`

	// Syslog configures a Syslog destination: PostgreSQL's syslog_* settings and where
	// the receiver sends the records; its defaults apply when it is left out.
	// +optional
	Syslog *SyslogSpec `json:"syslog,omitempty"`

	// Logging overrides spec.logging for this destination, field by field: what it
	// leaves out comes from spec.logging. Destinations of one type with different
	// settings compare those settings against one baseline, in the same rounds. The
	// baseline (type None) logs nothing and takes none.
	// +optional
	Logging *LoggingOverride `json:"logging,omitempty"`

	// Placement overrides spec.workload.placement for this destination's runs, so that
	// one benchmark compares placements in the same rounds. Each overhead is measured
	// against the destination of type None placed the same way, so a destination placed
	// otherwise than the workload needs a destination of type None with its placement
	// (the automatic baseline takes the workload's). Local runs ignore it, as they
	// ignore spec.workload.placement: client and server share one machine.
	// +optional
	Placement Placement `json:"placement,omitempty"`
}

// SyslogFacility is syslog_facility.
// +kubebuilder:validation:Enum=LOCAL0;LOCAL1;LOCAL2;LOCAL3;LOCAL4;LOCAL5;LOCAL6;LOCAL7
type SyslogFacility string

// SyslogTransport is how the records leave the instance pod's receiver.
// +kubebuilder:validation:Enum=local;udp;tcp
type SyslogTransport string

const (
	// SyslogLocal counts the records at the receiver on /dev/log, in the instance pod.
	SyslogLocal SyslogTransport = "local"
	// SyslogUDP forwards them over UDP to a receiver Service in the benchmark's
	// namespace, where they are counted: what UDP loses is lost.
	SyslogUDP SyslogTransport = "udp"
	// SyslogTCP forwards them over TCP to that receiver Service.
	SyslogTCP SyslogTransport = "tcp"
)

// SyslogReceiver is the program that receives the records on the instance pod's /dev/log.
// +kubebuilder:validation:Enum=FluentBit;Rsyslog
type SyslogReceiver string

const (
	// SyslogFluentBit is a Fluent Bit sidecar, which keeps every message it reads and
	// may forward them (transport udp or tcp).
	SyslogFluentBit SyslogReceiver = "FluentBit"
	// SyslogRsyslog is rsyslogd, the system syslog daemon of Debian and most
	// distributions, in a sidecar with its configuration as Debian ships it but for what
	// running unprivileged beside PostgreSQL needs: it writes the messages to a file that
	// logbench counts.
	SyslogRsyslog SyslogReceiver = "Rsyslog"
)

// SyslogRateLimit is rsyslog's rate limiting of the system socket (imuxsock's
// SysSock.RateLimit.Interval and SysSock.RateLimit.Burst), for each sending process: of
// the messages a process sends in an interval, opened by its first message after the
// previous one ended, the first burst are kept and the rest dropped.
type SyslogRateLimit struct {
	// IntervalSeconds is SysSock.RateLimit.Interval.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	IntervalSeconds int32 `json:"intervalSeconds"`

	// Burst is SysSock.RateLimit.Burst: the messages of a process kept in an interval.
	// At least 10: the agent's session that marks where a run's records start sends a
	// few messages before its marker, which must pass.
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=1000000000
	Burst int32 `json:"burst"`
}

// SyslogSpec is PostgreSQL's syslog configuration, the receiver and its transport.
// +kubebuilder:validation:XValidation:rule="!has(self.receiver) || self.receiver != 'Rsyslog' || !has(self.transport) || self.transport == 'local'",message="the Rsyslog receiver counts the records in the instance pod: it takes transport local only"
// +kubebuilder:validation:XValidation:rule="!has(self.rateLimit) || (has(self.receiver) && self.receiver == 'Rsyslog')",message="rateLimit is rsyslog's: it applies only to receiver Rsyslog"
type SyslogSpec struct {
	// Facility is syslog_facility.
	// +kubebuilder:default=LOCAL0
	Facility SyslogFacility `json:"facility,omitempty"`

	// Ident is syslog_ident, the program name of every message.
	// +kubebuilder:default=postgres
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_.-]+$`
	Ident string `json:"ident,omitempty"`

	// SequenceNumbers is syslog_sequence_numbers: each message starts with [n], or [n-m]
	// for the m-th chunk of a split one.
	// +kubebuilder:default=true
	SequenceNumbers *bool `json:"sequenceNumbers,omitempty"`

	// SplitMessages is syslog_split_messages: PostgreSQL sends each line of a record,
	// and each 900 bytes of a longer line, as a message of its own.
	// +kubebuilder:default=true
	SplitMessages *bool `json:"splitMessages,omitempty"`

	// Transport is where the records are counted: local, at the receiver on the instance
	// pod's /dev/log; udp or tcp, at a receiver Service the local receiver forwards to.
	// +kubebuilder:default=local
	Transport SyslogTransport `json:"transport,omitempty"`

	// Receiver is the program on /dev/log: FluentBit (the default) or Rsyslog, with
	// transport local. Debian bookworm's rsyslog (8.2302) does not rate-limit by default
	// (imuxsock's SysSock.RateLimit.Interval is 0 since rsyslog 5.9.5); rsyslog 5.8, the
	// system daemon of the distributions of PostgreSQL 9.2's time, kept 200 messages of
	// each process in 5 seconds and dropped the rest, which fits the article whose syslog
	// kept about 0.5% of the records: set rateLimit to measure such a limit. The
	// destination's shipper.image, when set, is rsyslog's image, and shipper.output does
	// not apply: rsyslog writes a file, in which logbench counts the records.
	// +kubebuilder:default=FluentBit
	Receiver SyslogReceiver `json:"receiver,omitempty"`

	// RateLimit turns on rsyslog's rate limiting of the system socket, which its default
	// leaves off; receiver Rsyslog only. {intervalSeconds: 5, burst: 200} is rsyslog
	// 5.8's default.
	// +optional
	RateLimit *SyslogRateLimit `json:"rateLimit,omitempty"`
}

// LoggingOverride is a destination's own logging: each field set replaces the one of
// spec.logging (see LoggingSpec for what each means). pgaudit, when set, replaces
// spec.logging's whole; a destination cannot turn off the pgaudit of spec.logging: set
// pgaudit on the destinations that audit instead.
type LoggingOverride struct {
	// Statement overrides spec.logging.statement.
	// +optional
	Statement *StatementLogging `json:"statement,omitempty"`
	// MinDurationStatement overrides spec.logging.minDurationStatement.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	MinDurationStatement *int32 `json:"minDurationStatement,omitempty"`
	// Duration overrides spec.logging.duration.
	// +optional
	Duration *bool `json:"duration,omitempty"`
	// Connections overrides spec.logging.connections.
	// +optional
	Connections *bool `json:"connections,omitempty"`
	// Disconnections overrides spec.logging.disconnections.
	// +optional
	Disconnections *bool `json:"disconnections,omitempty"`
	// TrackIOTiming overrides spec.logging.trackIOTiming.
	// +optional
	TrackIOTiming *bool `json:"trackIOTiming,omitempty"`
	// Pgaudit overrides spec.logging.pgaudit.
	// +optional
	Pgaudit *PgauditSpec `json:"pgaudit,omitempty"`
	// LinePrefix overrides spec.logging.linePrefix.
	// +optional
	LinePrefix *LinePrefix `json:"linePrefix,omitempty"`
	// MinDurationSample overrides spec.logging.minDurationSample.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	MinDurationSample *int32 `json:"minDurationSample,omitempty"`
	// StatementSampleRate overrides spec.logging.statementSampleRate.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	StatementSampleRate *float64 `json:"statementSampleRate,omitempty"`
	// TransactionSampleRate overrides spec.logging.transactionSampleRate.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	TransactionSampleRate *float64 `json:"transactionSampleRate,omitempty"`
	// AutoExplain overrides spec.logging.autoExplain; like pgaudit, it cannot turn off
	// the autoExplain of spec.logging.
	// +optional
	AutoExplain *AutoExplainSpec `json:"autoExplain,omitempty"`
	// LockWaits overrides spec.logging.lockWaits.
	// +optional
	LockWaits *bool `json:"lockWaits,omitempty"`
	// TempFiles overrides spec.logging.tempFiles.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	TempFiles *int32 `json:"tempFiles,omitempty"`
}

// ContainerLogCounting says whether a Stdout destination counted in its node agent's
// backend counts its records in the container log too.
// +kubebuilder:validation:Enum=Count;Skip
type ContainerLogCounting string

const (
	ContainerLogCount ContainerLogCounting = "Count"
	ContainerLogSkip  ContainerLogCounting = "Skip"
)

// ShipperKind is the program that ships the records.
// +kubebuilder:validation:Enum=FluentBit;OpenTelemetryCollector
type ShipperKind string

const (
	// ShipperFluentBit is Fluent Bit.
	ShipperFluentBit ShipperKind = "FluentBit"
	// ShipperOpenTelemetryCollector is the OpenTelemetry Collector, shipping to Loki's
	// native OTLP endpoint.
	ShipperOpenTelemetryCollector ShipperKind = "OpenTelemetryCollector"
)

// ShipperKinds are the kinds of shipper the Enum marker of ShipperKind admits, listed
// for code that must handle every kind; a test keeps the two lists equal.
var ShipperKinds = []ShipperKind{ShipperFluentBit, ShipperOpenTelemetryCollector}

// ShipperOutput is where the shipper sends the records.
// +kubebuilder:validation:Enum=Null;Stdout;Loki
type ShipperOutput string

const (
	// OutputNull discards the records after reading them: the cost of reading alone.
	OutputNull ShipperOutput = "Null"
	// OutputStdout prints the records on the sidecar's standard output.
	OutputStdout ShipperOutput = "Stdout"
	// OutputLoki pushes the records to the destination's Loki.
	OutputLoki ShipperOutput = "Loki"
)

// StorageType is where the shipper buffers records it has not sent yet.
// +kubebuilder:validation:Enum=memory;filesystem
type StorageType string

const (
	StorageMemory     StorageType = "memory"
	StorageFilesystem StorageType = "filesystem"
)

// ShipperSpec is the shipper sidecar of a FluentBitSidecar or Loki destination.
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind == 'FluentBit' || (!has(self.memBufLimit) && !has(self.storageType))",message="memBufLimit and storageType configure Fluent Bit's buffer; leave them out with kind OpenTelemetryCollector"
type ShipperSpec struct {
	// Kind of shipper; FluentBitSidecar destinations take only FluentBit.
	// +kubebuilder:default=FluentBit
	Kind ShipperKind `json:"kind,omitempty"`

	// Image of the shipper; empty means logbench's pinned official image of the kind.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// Format is what PostgreSQL writes on the pod's scratch volume for the shipper to
	// read: CSVLog or JSONLog.
	// +kubebuilder:default=CSVLog
	// +kubebuilder:validation:XValidation:rule="self != 'Stderr'",message="the shipper reads CSVLog or JSONLog files"
	Format LogFormat `json:"format,omitempty"`

	// Output is where a FluentBitSidecar destination's shipper sends the records: Null
	// (the default) or Stdout measure the shipper alone, Loki also needs loki. A Loki
	// destination always ships to Loki.
	// +optional
	Output ShipperOutput `json:"output,omitempty"`

	// MemBufLimit bounds the records Fluent Bit's tail input holds in memory; reading
	// pauses at the limit. Empty means Fluent Bit's default (no limit).
	// +optional
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="memBufLimit must be greater than 0 and at most 4Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('4Gi')) <= 0",message="memBufLimit must be greater than 0 and at most 4Gi"
	MemBufLimit *resource.Quantity `json:"memBufLimit,omitempty"`

	// StorageType is where Fluent Bit buffers records: memory (the default) or
	// filesystem, on a volume of the sidecar that lives as long as the pod.
	// +optional
	StorageType StorageType `json:"storageType,omitempty"`

	// Resources of the shipper container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
}

// LokiSpec is a Loki push endpoint.
type LokiSpec struct {
	// URL is the base URL of Loki (scheme, host, optional port and path prefix), without
	// /loki/api/v1/push or /otlp: logbench appends what the shipper needs.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",message="url must be an http or https URL with a host, such as http://loki.monitoring:3100"
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.contains('?') && !self.contains('#')",message="url must hold no credentials, query or fragment: put credentials in a Secret and reference it in auth"
	// Fluent Bit and the collector expand ${...} in their configuration, files included.
	// +kubebuilder:validation:XValidation:rule="!self.contains('$')",message="url must not contain $: the shippers would expand ${...} in it"
	// +kubebuilder:validation:XValidation:rule="!self.matches(r\"[\\s\\p{Z}\\p{Cc}]\")",message="url must hold no spaces or control characters: escape them (%20)"
	URL string `json:"url"`

	// TenantID is sent as X-Scope-OrgID; empty sends none (single-tenant Loki).
	// +optional
	// +kubebuilder:validation:MaxLength=150
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9!._*'()-]+$`
	TenantID string `json:"tenantID,omitempty"`

	// Auth authenticates the pushes and logbench's count queries with credentials kept in
	// a Secret of the benchmark's namespace; they never enter the resource.
	// +optional
	Auth *LokiAuth `json:"auth,omitempty"`

	// Selector is the LogQL stream selector under which the platform's node agent stores
	// the primary's container log, for a Stdout destination. ${namespace}, ${pod},
	// ${container} and ${cluster} stand for the primary's namespace, pod, container
	// (postgres) and CloudNativePG cluster when a run starts. Empty means
	// {namespace="${namespace}", pod="${pod}"}, the labels Promtail, Grafana Alloy and the
	// common Fluent Bit DaemonSet setups attach.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// Matchers only, as LogQL's grammar writes them (label name, =, !=, =~ or !~, a
	// double-quoted string): the selector is pasted into the count query, where anything
	// else could change what is counted.
	// +kubebuilder:validation:XValidation:rule="self.matches('^\\\\{\\\\s*[a-zA-Z_][a-zA-Z0-9_]*\\\\s*(=|!=|=~|!~)\\\\s*\"([^\"\\\\\\\\]|\\\\\\\\[abfnrtv\\\\\\\\\"])*\"\\\\s*(,\\\\s*[a-zA-Z_][a-zA-Z0-9_]*\\\\s*(=|!=|=~|!~)\\\\s*\"([^\"\\\\\\\\]|\\\\\\\\[abfnrtv\\\\\\\\\"])*\"\\\\s*)*\\\\}$')",message="selector must be a LogQL stream selector of matchers only, such as {namespace=\"${namespace}\", pod=\"${pod}\"}"
	// +kubebuilder:validation:XValidation:rule="!self.replace('${namespace}', '').replace('${pod}', '').replace('${container}', '').replace('${cluster}', '').contains('${')",message="selector may use only ${namespace}, ${pod}, ${container} and ${cluster}"
	Selector string `json:"selector,omitempty"`

	// Labels are extra stream labels (Fluent Bit) or resource attributes (OpenTelemetry
	// Collector) on every record.
	// +optional
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-zA-Z_][a-zA-Z0-9_]{0,62}$'))",message="label names must be Prometheus label names: a letter or _, then letters, digits or _, at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['job', 'namespace', 'benchmark', 'destination']) && !k.startsWith('__'))",message="labels job, namespace, benchmark, destination and names starting with __ are set by logbench"
	Labels map[string]LabelValue `json:"labels,omitempty"`
}

// LabelValue is the value of a stream label; the characters exclude the separators of
// Fluent Bit's labels setting.
// +kubebuilder:validation:MaxLength=128
// +kubebuilder:validation:Pattern=`^[-._/:a-zA-Z0-9]+$`
type LabelValue string

// LokiAuth names the Secret holding Loki's credentials: basic auth or a bearer token.
// +kubebuilder:validation:XValidation:rule="has(self.basic) != has(self.bearerToken)",message="auth takes exactly one of basic and bearerToken"
type LokiAuth struct {
	// Basic authentication with a username and a password from a Secret.
	// +optional
	Basic *BasicAuthSecret `json:"basic,omitempty"`

	// BearerToken sends a token from a Secret as Authorization: Bearer.
	// +optional
	BearerToken *SecretKeyRef `json:"bearerToken,omitempty"`
}

// BasicAuthSecret is a Secret holding a username and a password.
type BasicAuthSecret struct {
	// SecretName is the Secret in the benchmark's namespace.
	SecretName SecretName `json:"secretName"`

	// UsernameKey is the Secret's key holding the username.
	// +kubebuilder:default=username
	UsernameKey SecretKey `json:"usernameKey,omitempty"`

	// PasswordKey is the Secret's key holding the password.
	// +kubebuilder:default=password
	PasswordKey SecretKey `json:"passwordKey,omitempty"`
}

// SecretKeyRef is one key of a Secret.
type SecretKeyRef struct {
	// SecretName is the Secret in the benchmark's namespace.
	SecretName SecretName `json:"secretName"`

	// Key of the Secret holding the value.
	// +kubebuilder:default=token
	Key SecretKey `json:"key,omitempty"`
}

// SecretName is the name of a Secret.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
type SecretName string

// SecretKey is a key of a Secret's data.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
type SecretKey string

// BaselineSpec controls the automatic baseline.
type BaselineSpec struct {
	// Enabled adds a destination named "baseline" of type None unless one of type None
	// is listed.
	// +kubebuilder:default=true
	Enabled bool `json:"enabled"`
}

// BuiltinWorkload is the pgbench builtin script the workload reproduces.
// +kubebuilder:validation:Enum=SelectOnly;TPCBLike;SimpleUpdate
type BuiltinWorkload string

const (
	WorkloadSelectOnly   BuiltinWorkload = "SelectOnly"
	WorkloadTPCBLike     BuiltinWorkload = "TPCBLike"
	WorkloadSimpleUpdate BuiltinWorkload = "SimpleUpdate"
)

// QueryMode is pgbench's --protocol.
// +kubebuilder:validation:Enum=Simple;Extended;Prepared
type QueryMode string

const (
	QuerySimple   QueryMode = "Simple"
	QueryExtended QueryMode = "Extended"
	QueryPrepared QueryMode = "Prepared"
)

// Aggregate says how repeats of one run are combined.
// +kubebuilder:validation:Enum=Median;Best
type Aggregate string

const (
	AggregateMedian Aggregate = "Median"
	AggregateBest   Aggregate = "Best"
)

// WorkloadSpec is the pgbench workload.
// The API server fills in clients' default before it validates: a ramp is accepted
// beside that default only, which cannot be told from clients set to it.
// +kubebuilder:validation:XValidation:rule="!has(self.ramp) || self.clients == [1, 4]",message="ramp replaces clients: leave clients unset"
// +kubebuilder:validation:XValidation:rule="!has(self.scripts) || self.builtin == 'SelectOnly'",message="scripts replace the builtin workload: leave builtin unset"
type WorkloadSpec struct {
	// Builtin is the pgbench builtin script reproduced (with the run's tag in it).
	// +kubebuilder:default=SelectOnly
	Builtin BuiltinWorkload `json:"builtin,omitempty"`

	// Scripts are the user's own pgbench scripts, run instead of the builtin; scale and
	// unloggedTables then do nothing (their init creates what they use). They need the
	// records counted at the source (logbench_counter).
	// +optional
	Scripts *WorkloadScripts `json:"scripts,omitempty"`

	// QueryMode is pgbench's --protocol.
	// +kubebuilder:default=Prepared
	QueryMode QueryMode `json:"queryMode,omitempty"`

	// Scale is pgbench's scale factor (100,000 accounts per unit).
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Scale int32 `json:"scale,omitempty"`

	// UnloggedTables creates the pgbench tables UNLOGGED (no WAL).
	// +optional
	UnloggedTables bool `json:"unloggedTables,omitempty"`

	// Clients are the client counts to run, each a separate run; ramp replaces them.
	// +kubebuilder:default={1,4}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=1000
	// +listType=set
	Clients []int32 `json:"clients,omitempty"`

	// Ramp, instead of a fixed list of clients, finds each destination's knee: it runs
	// rounds at growing client counts and stops a destination at the first count that
	// meets one of its stop conditions. Leave clients unset with it.
	// +optional
	Ramp *RampSpec `json:"ramp,omitempty"`

	// Threads is pgbench's --jobs; 0 means min(clients, CPUs available to pgbench).
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Threads int32 `json:"threads,omitempty"`

	// Duration of each run.
	// +kubebuilder:default="30s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+h)?([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="duration must be between 1s and 24h"
	Duration metav1.Duration `json:"duration,omitempty"`

	// Repeats of every run; results aggregate them.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	Repeats int32 `json:"repeats,omitempty"`

	// Aggregate is how repeats are combined.
	// +kubebuilder:default=Median
	Aggregate Aggregate `json:"aggregate,omitempty"`

	// Warmup runs pgbench this long, unmeasured, before each destination's first run at
	// each client count (its repeat 1), so that cold caches and connection start-up do
	// not count against whichever destination runs first; 0s turns it off.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+m)?([0-9]+s)?$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('10m')",message="warmup must be at most 10m"
	Warmup metav1.Duration `json:"warmup,omitempty"`

	// Seed orders the destinations in every round of runs, and the same seed replays the
	// same order. By default it is derived from the benchmark's UID in a cluster, so that
	// a restarted operator keeps the order, and drawn at random locally;
	// status.schedule.seed records the one used.
	// +optional
	Seed *int64 `json:"seed,omitempty"`

	// Resources of the pgbench pod.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Placement of the pgbench pod against its cluster's primary: Apart prefers another
	// node, so that the client does not compete with the server for its cores, and falls
	// back to the primary's node where no other can take the pod; SameNode requires the
	// primary's node; Anywhere leaves it to the scheduler.
	// +kubebuilder:default=Apart
	Placement Placement `json:"placement,omitempty"`
}

// RampSpec grows the client count round by round: start, then start×factor or
// start+step and so on, up to max (which is run even when the growth steps over it).
// +kubebuilder:validation:XValidation:rule="has(self.factor) != has(self.step)",message="ramp grows by factor or by step: set exactly one"
// +kubebuilder:validation:XValidation:rule="self.max >= self.start",message="ramp.max must be at least ramp.start"
// +kubebuilder:validation:XValidation:rule="!has(self.step) || (self.max - self.start) / self.step < 16",message="a ramp runs at most 16 client counts: raise step or lower max"
type RampSpec struct {
	// Start is the first client count.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Start int32 `json:"start,omitempty"`

	// Factor multiplies the client count from one round to the next.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10
	Factor int32 `json:"factor,omitempty"`

	// Step adds to the client count from one round to the next.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Step int32 `json:"step,omitempty"`

	// Max is the highest client count.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Max int32 `json:"max"`

	// StopWhen are the conditions that stop a destination's ramp; with none, every
	// destination runs up to max.
	// +optional
	StopWhen RampStopConditions `json:"stopWhen,omitempty"`
}

// RampStopConditions stop a destination's ramp at the first client count whose result
// row (its repeats aggregated) meets one of them; a count whose runs all failed stops
// it too.
type RampStopConditions struct {
	// OverheadAbovePercent stops a destination whose overhead against the baseline
	// exceeds this percentage.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	OverheadAbovePercent *int32 `json:"overheadAbovePercent,omitempty"`

	// DroppedRecords stops a destination that lost records (dropped or droppedAtLeast
	// above 0).
	// +optional
	DroppedRecords bool `json:"droppedRecords,omitempty"`

	// TPSGainBelowPercent stops a destination whose TPS rose by less than this percentage
	// over its TPS at the previous client count; 0 stops it once TPS falls.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	TPSGainBelowPercent *int32 `json:"tpsGainBelowPercent,omitempty"`
}

// ProcessUsage is what a group of processes spent over a measurement: the server's
// (locally PostgreSQL's processes, every backend, the logging collector, the checkpointer
// and the others; in a cluster its instance pod's postgres container, which adds
// CloudNativePG's instance manager) or a shipper sidecar's.
type ProcessUsage struct {
	// CPUSeconds is their CPU time over the measurement; absent when it is unknown:
	// processes kept exiting while the meter read them, so that no reading could count
	// each one exactly once.
	// +optional
	CPUSeconds *float64 `json:"cpuSeconds,omitempty"`
	// WallSeconds is how long the measurement lasted.
	WallSeconds float64 `json:"wallSeconds"`
	// PeakMemoryBytes is the most memory they held at once, sampled every 250 ms, shared
	// buffers counted once: locally the proportional set size, in a cluster an estimate from
	// the resident memory /proc shows every user; absent when unreadable.
	// +optional
	PeakMemoryBytes *int64 `json:"peakMemoryBytes,omitempty"`
}

// Knee is where a destination's ramp stopped.
type Knee struct {
	// Destination is the destination's name.
	Destination string `json:"destination"`

	// Clients is the highest client count that met every bound; 0 when the first did not.
	Clients int32 `json:"clients"`

	// StoppedAt is the client count whose result met a stop condition; absent when the
	// ramp reached its maximum.
	// +optional
	StoppedAt int32 `json:"stoppedAt,omitempty"`

	// Reason says which condition stopped the ramp and by how much, or that it reached
	// its maximum.
	Reason string `json:"reason"`
}

// Placement of the pgbench pod against its cluster's primary.
// +kubebuilder:validation:Enum=Apart;SameNode;Anywhere
type Placement string

const (
	PlacementApart    Placement = "Apart"
	PlacementSameNode Placement = "SameNode"
	PlacementAnywhere Placement = "Anywhere"
)

// Phase is the lifecycle phase of a benchmark.
// +kubebuilder:validation:Enum=Pending;Provisioning;Running;Succeeded;Failed
type Phase string

const (
	PhasePending      Phase = "Pending"
	PhaseProvisioning Phase = "Provisioning"
	PhaseRunning      Phase = "Running"
	PhaseSucceeded    Phase = "Succeeded"
	PhaseFailed       Phase = "Failed"
)

// MaxRows bounds destinations × client counts, the result rows of a status, and MaxRuns
// destinations × client counts × repeats, the runs of a benchmark (the CEL rules of
// LoggingBenchmarkSpec).
const (
	MaxRows = 150
	MaxRuns = 1000
)

// Bounds of the free text of a status, in bytes of its JSON (a character JSON escapes
// counts as its escape), so that the largest status stays under 1 MiB whatever its runs
// report (status_size_test.go); a text cut to its bound ends with an ellipsis.
const (
	// MaxMessageLength bounds a message: a run's error, a destination's or a condition's.
	MaxMessageLength = 1024
	// MaxRunReasonLength bounds each reason and message of a run's records: dropReason,
	// unverifiedReason, accountingError and sampler.message.
	MaxRunReasonLength = 512
	// MaxRowTextLength bounds each text of a result row: its records' reasons, joined
	// from its repeats' (which keep their own), and its logging settings.
	MaxRowTextLength = 512
	// MaxNodeNameLength bounds the names of a run's nodes, as Kubernetes does.
	MaxNodeNameLength = 253
	// MaxStageNameLength bounds the stage names of a run's records (lostAt,
	// unverifiedAt).
	MaxStageNameLength = 32
)

// LoggingBenchmarkStatus is the observed state of a benchmark. Everything in it can be
// reconstructed from the benchmark's clusters, its runs' records (LoggingBenchmarkRuns)
// and the Jobs of runs not recorded yet.
type LoggingBenchmarkStatus struct {
	// ObservedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase of the benchmark.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Conditions: Ready (the benchmark finished), Progressing, Degraded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Progress of the runs.
	// +optional
	Progress Progress `json:"progress,omitempty"`

	// Schedule is the order the runs execute in.
	// +optional
	Schedule *Schedule `json:"schedule,omitempty"`

	// Knees are the knees of the destinations whose ramp (spec.workload.ramp) ended.
	// +optional
	// +listType=map
	// +listMapKey=destination
	Knees []Knee `json:"knees,omitempty"`

	// StartTime is when the first cluster was requested.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the benchmark reached Succeeded or Failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Destinations is the state of each destination's cluster.
	// +optional
	// +listType=map
	// +listMapKey=name
	Destinations []DestinationStatus `json:"destinations,omitempty"`

	// Results has one row per destination and client count.
	// +optional
	Results []Result `json:"results,omitempty"`

	// Summary holds the figures shown by kubectl get.
	// +optional
	Summary Summary `json:"summary,omitempty"`
}

// Schedule is the order of a benchmark's runs: rounds, one per client count and repeat,
// each running every destination once in an order shuffled from the seed.
type Schedule struct {
	// Seed shuffled every round; set it as spec.workload.seed to replay the order.
	Seed int64 `json:"seed"`
	// Runs lists the runs in the order they execute, as destination/clients/repeat.
	// +optional
	Runs []string `json:"runs,omitempty"`
}

// Progress counts runs (one pgbench execution each).
type Progress struct {
	// Done runs, failed ones included.
	RunsDone int32 `json:"runsDone"`
	// Total runs: destinations x client counts x repeats.
	RunsTotal int32 `json:"runsTotal"`
	// Text is "done/total", for kubectl get.
	Text string `json:"text,omitempty"`
	// Current is the run in progress, as destination/clients/repeat. While the phase is
	// Running, it is the run assigned to its destination's runner, which executes it and
	// records its LoggingBenchmarkRun.
	// +optional
	Current string `json:"current,omitempty"`
	// CurrentSince is when the current run was assigned: a run not recorded within its
	// deadline from then is recorded failed.
	// +optional
	CurrentSince *metav1.Time `json:"currentSince,omitempty"`
}

// DestinationState is the state of a destination's cluster.
// +kubebuilder:validation:Enum=Pending;Provisioning;Ready;Failed;Deleted
type DestinationState string

const (
	DestinationPending      DestinationState = "Pending"
	DestinationProvisioning DestinationState = "Provisioning"
	DestinationReady        DestinationState = "Ready"
	DestinationFailed       DestinationState = "Failed"
	DestinationDeleted      DestinationState = "Deleted"
)

// DestinationStatus is the state of one destination's cluster.
type DestinationStatus struct {
	// Name of the destination.
	Name string `json:"name"`
	// Type of the destination.
	Type DestinationType `json:"type"`
	// ClusterName is the CloudNativePG cluster serving it.
	ClusterName string `json:"clusterName"`
	// State of the cluster.
	State DestinationState `json:"state"`
	// Message explains a failure.
	// +optional
	Message string `json:"message,omitempty"`
}

// Records counts the log records of runs. Every expected record was delivered, arrived
// late, was dropped or could not be verified, and a record held more than once counts
// once:
//
//	expected = delivered + arrivedLate - duplicates + unverified + dropped
//
// dropped is never negative: when the records that arrived, counted once, are more than
// the server can have emitted, accountingError says so instead.
type Records struct {
	// Expected records PostgreSQL had to emit, from pgbench's counts and the settings.
	Expected int64 `json:"expected"`
	// Delivered records counted at the destination when the drain ended.
	Delivered int64 `json:"delivered"`
	// ArrivedLate records reached the destination after the drain ended: a final recount
	// found them. They are neither delivered nor dropped.
	// +optional
	ArrivedLate int64 `json:"arrivedLate,omitempty"`
	// Dropped is expected - (delivered + arrivedLate - duplicates) - unverified: records
	// the pipeline is shown to have lost. Absent when expected is an estimate or
	// duplicates were found (duplicates are a lower bound, so the drop is too).
	// +optional
	Dropped *int64 `json:"dropped,omitempty"`
	// DroppedAtLeast is set when expected is an estimate (a lower bound) or duplicates
	// were found but not counted exactly (stages.duplicatesExact), and fewer records
	// arrived, counted once, than the expectation: at least this many were dropped.
	// +optional
	DroppedAtLeast *int64 `json:"droppedAtLeast,omitempty"`
	// Duplicates are copies beyond the first of records the destination holds more than
	// once (a push retried after the backend had stored it): at least this many, counted
	// as the records stored beyond the fewest an earlier stage held (written to the file,
	// read by the shipper, in the container log, or what the server can have emitted), and
	// only when the pipeline reports retries; exactly this many when
	// stages.duplicatesExact. Counted apart: they never offset a drop.
	// +optional
	Duplicates int64 `json:"duplicates,omitempty"`
	// Unverified records are those logbench could not see, which the pipeline may have
	// delivered: the records a log stream skipped when the kubelet rotated the container
	// log under it. They are never counted as dropped.
	// +optional
	Unverified int64 `json:"unverified,omitempty"`
	// UnverifiedReason says why records could not be verified.
	// +optional
	UnverifiedReason string `json:"unverifiedReason,omitempty"`
	// Sampler compares a Stdout row's records on CloudNativePG with what its instance
	// manager's log sampler lets through.
	// +optional
	Sampler *SamplerCheck `json:"sampler,omitempty"`
	// ExpectedIsEstimate is true when the settings make an exact count impossible
	// (log_min_duration_statement above 0, failed transactions).
	// +optional
	ExpectedIsEstimate bool `json:"expectedIsEstimate,omitempty"`
	// ExpectedSource says where expected comes from: counted at the source, by the
	// server itself, or predicted from pgbench's counts and the settings. Absent in
	// results written before logbench counted at the source: predicted.
	// +optional
	ExpectedSource ExpectedSource `json:"expectedSource,omitempty"`
	// AccountingError is set when more records arrived than the server can have emitted:
	// the counts cannot both be right, and the row says so instead of clamping.
	// +optional
	AccountingError string `json:"accountingError,omitempty"`
	// DropReason says where dropped records went, as far as the shipper's and Loki's own
	// counters tell.
	// +optional
	DropReason string `json:"dropReason,omitempty"`
	// Stages counts a shipping destination's records at each stage of its pipeline.
	// +optional
	Stages *RecordStages `json:"stages,omitempty"`
}

// ExpectedSource says where a run's expected records come from.
// +kubebuilder:validation:Enum=Counted;Predicted
type ExpectedSource string

const (
	// ExpectedCounted: counted at the source. The server counted the records it sent to
	// its log for the run's sessions (the logbench_counter extension); where the model
	// predicts them too, the two agree or the row has an accounting error.
	ExpectedCounted ExpectedSource = "Counted"
	// ExpectedPredicted: predicted from pgbench's counts and the logging settings.
	ExpectedPredicted ExpectedSource = "Predicted"
)

// SamplerVerdict says how a row's records compare with CloudNativePG's log sampler.
// +kubebuilder:validation:Enum=NoLoss;MatchesSampler;ExceedsSampler;NotSampled;Unknown
type SamplerVerdict string

const (
	// SamplerNoLoss: every expected record arrived.
	SamplerNoLoss SamplerVerdict = "NoLoss"
	// SamplerMatches: the records the sampler let through account for every expected
	// record: the sampler alone lost the missing ones.
	SamplerMatches SamplerVerdict = "MatchesSampler"
	// SamplerExceeds: fewer records arrived than the sampler lets through: something
	// besides the sampler lost records too.
	SamplerExceeds SamplerVerdict = "ExceedsSampler"
	// SamplerNotSampled: more records arrived than the sampler lets through: the
	// instance manager did not sample them (a log level below info, or a fixed release).
	SamplerNotSampled SamplerVerdict = "NotSampled"
	// SamplerUnknown: logbench did not see every record that reached the container log
	// (a rotation under its stream), or saw the run's records pass before it could tell
	// where a window starts, or the windows as read bound more records than the server
	// wrote: the sampler's windows cannot be told.
	SamplerUnknown SamplerVerdict = "Unknown"
)

// SamplerCheck compares the records of a Stdout row on CloudNativePG with its instance
// manager's sampler (cloudnative-pg issue #10815): per level and message, in windows of
// one second opened by the first record after the previous window closed, the first 100
// records pass, then the 200th, 300th and so on. From the records that reached the
// container log and their timestamps, each window's survivors tell how many records
// the sampler received in it, within 100.
type SamplerCheck struct {
	// Verdict of the comparison.
	Verdict SamplerVerdict `json:"verdict"`
	// ReceivedMin and ReceivedMax bound the run's records the sampler received, as its
	// windows' survivors tell.
	ReceivedMin int64 `json:"receivedMin"`
	ReceivedMax int64 `json:"receivedMax"`
	// Windows is the number of the sampler's one-second windows that held the run's
	// records.
	Windows int32 `json:"windows"`
	// Message says the verdict in words.
	// +optional
	Message string `json:"message,omitempty"`
}

// RecordStages counts a run's records at each stage of its pipeline, each stage on its
// own, since a shipper's own counters can miss its losses: for a shipping destination the
// file PostgreSQL wrote, what the shipper read and sent, and what Loki stored; for a
// Stdout destination counted in its node agent's Loki, the container log and what Loki
// stored. Stages a pipeline does not have, or that are not counted, are absent. They are
// counted when the drain ends: records that arrive later are counted in arrivedLate.
type RecordStages struct {
	// ContainerLog records of the run in the container log the kubelet holds, read as
	// the platform's node agent reads it.
	// +optional
	ContainerLog *int64 `json:"containerLog,omitempty"`
	// Written records of the run in the file PostgreSQL wrote, counted in the file.
	// +optional
	Written *int64 `json:"written,omitempty"`
	// Read records the shipper read and kept for the destination: Fluent Bit's input
	// records past its grep filter, the collector's accepted records (every record of
	// the file, the run's and others'), the records in the file an Rsyslog receiver
	// wrote (what its rate limiting dropped is lost here).
	// +optional
	Read *int64 `json:"read,omitempty"`
	// Forwarded records the receiver sidecar of a Syslog destination with transport udp
	// or tcp sent to the receiver Service.
	// +optional
	Forwarded *int64 `json:"forwarded,omitempty"`
	// Received records the receiver Service of a Syslog destination with transport udp
	// or tcp read and kept: fewer than forwarded were lost on the way (over UDP, without
	// a word to either end).
	// +optional
	Received *int64 `json:"received,omitempty"`
	// Sent records the shipper's output delivered (the receiver Service's, for a
	// forwarding Syslog destination).
	// +optional
	Sent *int64 `json:"sent,omitempty"`
	// Stored records of the run the backend holds: Loki's count, absent for outputs
	// logbench cannot query (Null, Stdout).
	// +optional
	Stored *int64 `json:"stored,omitempty"`
	// Duplicates the stored stage holds beyond one copy of each record (see
	// Records.duplicates): stored minus duplicates is compared with the stages before it.
	// +optional
	Duplicates int64 `json:"duplicates,omitempty"`
	// DuplicatesExact says duplicates were counted by the stored records' identity
	// (csvlog's and jsonlog's session and line number, read back from Loki): stored minus
	// the distinct records. Otherwise duplicates is a lower bound.
	// +optional
	DuplicatesExact bool `json:"duplicatesExact,omitempty"`
	// UnverifiedAt names the stage whose count logbench knows to be short of what the
	// stage held (containerLog, when the kubelet rotated the log under the stream that
	// counted it); its count is then a lower bound, and LostAt never names it.
	// +optional
	UnverifiedAt string `json:"unverifiedAt,omitempty"`
	// Unverified records the stage named by unverifiedAt may hold beyond its count, as
	// far as the stages around it tell.
	// +optional
	Unverified int64 `json:"unverified,omitempty"`
	// LostAt names the first stage holding fewer records, each counted once, than the one
	// before it (containerLog, written, read, forwarded, received, sent, stored;
	// containerLog when it holds fewer than the exact expectation), skipping an
	// unverified stage; empty when no stage lost any.
	// +optional
	LostAt string `json:"lostAt,omitempty"`
	// InputPausedSeconds is how long the shipper's input was seen paused during the run
	// because its buffer was full (Fluent Bit's memBufLimit), sampled every half second:
	// the file's records then wait to be read.
	// +optional
	InputPausedSeconds float64 `json:"inputPausedSeconds,omitempty"`
}

// DrainEnd says why the wait for a run's records ended.
// +kubebuilder:validation:Enum=Complete;Settled;Quiet;Timeout
type DrainEnd string

const (
	// DrainComplete: the destination held every expected record.
	DrainComplete DrainEnd = "Complete"
	// DrainSettled: the shipper had nothing in flight (every record it read sent or
	// dropped, none unread in the file it reads), or a container log that CloudNativePG
	// samples held a marker the server logged after the run's sessions ended, and a
	// count taken after that found no record more.
	DrainSettled DrainEnd = "Settled"
	// DrainQuiet: the count stayed unchanged for the destination's quiet period, longer
	// than its shipper waits before a retry.
	DrainQuiet DrainEnd = "Quiet"
	// DrainTimeout: drainTimeout passed while records could still arrive.
	DrainTimeout DrainEnd = "Timeout"
)

// DrainPoint is how many of a run's records the destination held some time after
// pgbench ended.
type DrainPoint struct {
	// AfterSeconds since pgbench ended.
	AfterSeconds float64 `json:"afterSeconds"`
	// Delivered records counted by then.
	Delivered int64 `json:"delivered"`
}

// RepeatResult is one pgbench execution.
type RepeatResult struct {
	// Repeat index, from 1.
	Repeat int32 `json:"repeat"`
	// TPS without initial connection time.
	TPS float64 `json:"tps"`
	// LatencyAvgMs is pgbench's average latency.
	LatencyAvgMs float64 `json:"latencyAvgMs"`
	// LatencyStdDevMs is pgbench's latency standard deviation.
	LatencyStdDevMs float64 `json:"latencyStdDevMs"`
	// Transactions processed.
	Transactions int64 `json:"transactions"`
	// FailedTransactions reported by pgbench.
	// +optional
	FailedTransactions int64 `json:"failedTransactions,omitempty"`
	// Records of this execution.
	Records Records `json:"records"`
	// DrainSeconds from the end of pgbench to the last record at the destination.
	DrainSeconds float64 `json:"drainSeconds"`
	// DrainEnd says why the wait for the records ended.
	// +optional
	DrainEnd DrainEnd `json:"drainEnd,omitempty"`
	// DrainCurve of a shipping destination: the records held when pgbench ended (the
	// first count), 1 s, 5 s and 30 s later, and when the drain ended; points the drain
	// did not reach are left out.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	DrainCurve []DrainPoint `json:"drainCurve,omitempty"`
	// LogBytes the server wrote to the destination's log files from the run's start to
	// the last count (for shipping destinations, to the file the shipper reads): the
	// run's records and the server's own. Absent where logbench reads no file (Stdout
	// destinations and the baseline in a cluster).
	// +optional
	LogBytes *int64 `json:"logBytes,omitempty"`
	// Server is what the server spent while pgbench ran; absent where the instance pod
	// has no meter (clusters created before logbench measured them).
	// +optional
	Server *ProcessUsage `json:"server,omitempty"`
	// Shipper is what a shipping destination's sidecar spent from the start of pgbench
	// to the end of the drain, while it shipped the run's records.
	// +optional
	Shipper *ProcessUsage `json:"shipper,omitempty"`
	// Receiver is what a forwarding Syslog destination's receiver pod spent over the same
	// time as the shipper.
	// +optional
	Receiver *ProcessUsage `json:"receiver,omitempty"`
	// Scripts are each script's share of a run of workload.scripts' files, in their
	// order; absent for a run of one script.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Scripts []ScriptResult `json:"scripts,omitempty"`
	// ClientNode ran the pgbench pod and ServerNode the cluster's primary when the run
	// ended, as the pods said; equal when the client competed with the server for a
	// node's cores. Local runs leave them out.
	// +optional
	ClientNode string `json:"clientNode,omitempty"`
	// +optional
	ServerNode string `json:"serverNode,omitempty"`
	// Error is set when the run failed after its retries; the numbers are then absent.
	// +optional
	Error string `json:"error,omitempty"`
	// FailedAttempts are the errors of the run's attempts that failed before the one
	// recorded here, oldest first: its runner tries a run three times, so a run measured
	// after a failover or a restart says what its earlier attempts met.
	// +optional
	// +kubebuilder:validation:MaxItems=2
	FailedAttempts []string `json:"failedAttempts,omitempty"`
}

// Result is the aggregate of one destination at one client count.
type Result struct {
	// Destination name.
	Destination string `json:"destination"`
	// Type of the destination.
	Type DestinationType `json:"type"`
	// Logging is the destination's effective logging settings in short, such as
	// "statement=all,duration=on": spec.logging with the destination's own over it.
	// +optional
	Logging string `json:"logging,omitempty"`
	// Clients of the runs.
	Clients int32 `json:"clients"`
	// TPS aggregated over successful repeats (median or best).
	TPS float64 `json:"tps"`
	// TPSStdDev across repeats.
	TPSStdDev float64 `json:"tpsStdDev"`
	// TPSCoefficientOfVariation is TPSStdDev / mean TPS, in percent.
	TPSCoefficientOfVariation float64 `json:"tpsCVPercent"`
	// LatencyAvgMs of the chosen repeat (median or best).
	LatencyAvgMs float64 `json:"latencyAvgMs"`
	// LatencyStdDevMs of the chosen repeat.
	LatencyStdDevMs float64 `json:"latencyStdDevMs"`
	// OverheadPercent is the TPS lost against the baseline (overheadAgainst) at the same
	// client count: the median of the overheads of the repeats paired with the baseline's
	// repeat of the same index, or from the aggregated TPS when no repeat has a pair;
	// absent for the baseline itself or when the baseline has no result.
	// +optional
	OverheadPercent *float64 `json:"overheadPercent,omitempty"`
	// OverheadInterval is the confidence interval of the median paired overhead; absent
	// with fewer than 3 pairs.
	// +optional
	OverheadInterval *OverheadInterval `json:"overheadInterval,omitempty"`
	// OverheadVerdict tells the overhead apart from noise: Significant when its interval
	// excludes 0, WithinNoise when it holds 0, Unknown without an interval.
	// +optional
	OverheadVerdict OverheadVerdict `json:"overheadVerdict,omitempty"`
	// OverheadAgainst names the destination the overhead is measured against: the
	// baseline in the status, the destination asked for in a report.
	// +optional
	OverheadAgainst string `json:"overheadAgainst,omitempty"`
	// Noisy is true when the TPS of the row's repeats varies by more than NoisyCVPercent
	// (coefficient of variation): its figures say less than they seem to.
	// +optional
	Noisy bool `json:"noisy,omitempty"`
	// Records summed over successful repeats.
	Records Records `json:"records"`
	// DrainSeconds is the longest drain of the repeats.
	DrainSeconds float64 `json:"drainSeconds"`
	// LogBytesPerRecord is the log bytes of the successful repeats over the run's records
	// the server wrote (delivered to a file, or written to a shipper's file): the record's
	// size with the server's own records spread over it. Absent without log bytes or
	// records.
	// +optional
	LogBytesPerRecord *float64 `json:"logBytesPerRecord,omitempty"`
	// LogGigabytesPerHour extrapolates the log bytes of the successful repeats to an hour
	// at the rate they were written: their bytes over their pgbench durations, in GB
	// (10^9 bytes). Absent without log bytes.
	// +optional
	LogGigabytesPerHour *float64 `json:"logGigabytesPerHour,omitempty"`
	// ServerCPUCores is the median over the repeats of the server's CPU time per second
	// of run; absent when no repeat measured it.
	// +optional
	ServerCPUCores *float64 `json:"serverCPUCores,omitempty"`
	// ServerCPUMsPer1kTransactions is the median over the repeats of the server's CPU
	// milliseconds per 1,000 transactions, the same as thousandths of a core per 1,000 TPS.
	// +optional
	ServerCPUMsPer1kTransactions *float64 `json:"serverCPUMsPer1kTransactions,omitempty"`
	// ServerPeakMemoryBytes is the highest memory peak of the repeats.
	// +optional
	ServerPeakMemoryBytes *int64 `json:"serverPeakMemoryBytes,omitempty"`
	// ShipperCPUCores is the median over the repeats of a shipping sidecar's CPU time per
	// second, from the start of pgbench to the end of the drain.
	// +optional
	ShipperCPUCores *float64 `json:"shipperCPUCores,omitempty"`
	// ShipperCPUMsPer1kRecords is the median over the repeats of the sidecar's CPU
	// milliseconds per 1,000 records the server wrote, the same as thousandths of a core
	// per 1,000 records a second.
	// +optional
	ShipperCPUMsPer1kRecords *float64 `json:"shipperCPUMsPer1kRecords,omitempty"`
	// ShipperPeakMemoryBytes is the sidecar's highest memory peak of the repeats.
	// +optional
	ShipperPeakMemoryBytes *int64 `json:"shipperPeakMemoryBytes,omitempty"`
	// ReceiverCPUCores is the median over the repeats of a forwarding Syslog
	// destination's receiver's CPU time per second, over the same time as the shipper's.
	// +optional
	ReceiverCPUCores *float64 `json:"receiverCPUCores,omitempty"`
	// ReceiverCPUMsPer1kRecords is the median over the repeats of the receiver's CPU
	// milliseconds per 1,000 records the server wrote.
	// +optional
	ReceiverCPUMsPer1kRecords *float64 `json:"receiverCPUMsPer1kRecords,omitempty"`
	// ReceiverPeakMemoryBytes is the receiver's highest memory peak of the repeats.
	// +optional
	ReceiverPeakMemoryBytes *int64 `json:"receiverPeakMemoryBytes,omitempty"`
	// Knee marks the row at its destination's knee (spec.workload.ramp): the highest
	// client count that met every bound of the ramp.
	// +optional
	Knee bool `json:"knee,omitempty"`
	// RampStop is the stop condition this row met, which ended its destination's ramp.
	// +optional
	RampStop string `json:"rampStop,omitempty"`
	// Repeats are the raw values, in local mode's results file and in a report; a
	// benchmark's status in a cluster leaves them out: each run's LoggingBenchmarkRun
	// holds its result, which kubectl logbench report reads.
	Repeats []RepeatResult `json:"repeats,omitempty"`
}

// OverheadInterval is a distribution-free confidence interval of the median of a row's
// paired overheads: between two order statistics of the pairs, chosen so that the
// interval holds the median with at least 95% confidence; with 3 to 5 pairs no such
// pair of order statistics exists and the interval spans them all, at the confidence
// it has (75%, 87.5%, 93.75%).
type OverheadInterval struct {
	// LowPercent and HighPercent bound the overhead.
	LowPercent  float64 `json:"lowPercent"`
	HighPercent float64 `json:"highPercent"`
	// ConfidencePercent is the probability that the interval holds the median overhead.
	ConfidencePercent float64 `json:"confidencePercent"`
	// Pairs is how many repeats were paired with the baseline's.
	Pairs int32 `json:"pairs"`
}

// OverheadVerdict tells an overhead apart from noise.
// +kubebuilder:validation:Enum=Significant;WithinNoise;Unknown
type OverheadVerdict string

const (
	// OverheadSignificant: the interval excludes 0.
	OverheadSignificant OverheadVerdict = "Significant"
	// OverheadWithinNoise: the interval holds 0, as benchstat's ~ says.
	OverheadWithinNoise OverheadVerdict = "WithinNoise"
	// OverheadUnknown: fewer than 3 repeats were paired with the baseline's, too few for
	// an interval.
	OverheadUnknown OverheadVerdict = "Unknown"
)

// NoisyCVPercent is the coefficient of variation of a row's TPS above which it is noisy.
const NoisyCVPercent = 10

// Summary holds figures for kubectl get.
type Summary struct {
	// WorstOverheadPercent over all rows, formatted, e.g. "42.1%".
	// +optional
	WorstOverhead string `json:"worstOverhead,omitempty"`
	// DroppedRecords over all rows with an exact count.
	// +optional
	DroppedRecords int64 `json:"droppedRecords,omitempty"`
	// DroppedAtLeast over all rows whose expected count is a lower bound: at least this
	// many more were dropped.
	// +optional
	DroppedAtLeast int64 `json:"droppedAtLeast,omitempty"`
	// UnverifiedRecords over all rows: records logbench could not see, never counted as
	// dropped.
	// +optional
	UnverifiedRecords int64 `json:"unverifiedRecords,omitempty"`
	// DuplicateRecords over all rows: records stored more than once, at least.
	// +optional
	DuplicateRecords int64 `json:"duplicateRecords,omitempty"`
	// DropsUnknown lists the rows, as destination/clients, whose drops cannot be told:
	// an accounting error, or an estimate that the delivered records reached.
	// +optional
	DropsUnknown []string `json:"dropsUnknown,omitempty"`
	// Dropped says the above in one cell for kubectl get, e.g. "120 + ≥300, 1 row unknown".
	// +optional
	Dropped string `json:"dropped,omitempty"`
	// Noise says when no overhead could be told apart from noise, and which rows are
	// noisy.
	// +optional
	Noise string `json:"noise,omitempty"`
}

// LoggingBenchmark measures what PostgreSQL logging costs for each logging destination.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=lbench,categories=logbench
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Progress",type=string,JSONPath=`.status.progress.text`
// +kubebuilder:printcolumn:name="Worst Overhead",type=string,JSONPath=`.status.summary.worstOverhead`
// +kubebuilder:printcolumn:name="Dropped",type=string,JSONPath=`.status.summary.dropped`
// +kubebuilder:printcolumn:name="Unverified",type=integer,JSONPath=`.status.summary.unverifiedRecords`,priority=1
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type LoggingBenchmark struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LoggingBenchmarkSpec   `json:"spec,omitempty"`
	Status LoggingBenchmarkStatus `json:"status,omitempty"`
}

// LoggingBenchmarkList is a list of LoggingBenchmark.
// +kubebuilder:object:root=true
type LoggingBenchmarkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LoggingBenchmark `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LoggingBenchmark{}, &LoggingBenchmarkList{})
}
