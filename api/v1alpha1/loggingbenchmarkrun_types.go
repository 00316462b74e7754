package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LoggingBenchmarkRunSpec names the run a LoggingBenchmarkRun records.
type LoggingBenchmarkRunSpec struct {
	// Benchmark is the name of the LoggingBenchmark, in the same namespace, that planned
	// the run.
	// +kubebuilder:validation:MinLength=1
	Benchmark string `json:"benchmark"`
	// Destination is the name of the destination the run measured.
	// +kubebuilder:validation:MinLength=1
	Destination string `json:"destination"`
	// Clients of the run.
	// +kubebuilder:validation:Minimum=1
	Clients int32 `json:"clients"`
	// Repeat index, from 1.
	// +kubebuilder:validation:Minimum=1
	Repeat int32 `json:"repeat"`
}

// LoggingBenchmarkRun records one finished run (one pgbench execution) of a
// LoggingBenchmark: its result, which a benchmark's status aggregates into its rows
// without holding it, so that a benchmark's runs are not bounded by the size of one
// object. The operator creates it, whole, when the run has finished, and never changes
// it; it is deleted with its benchmark.
//
// It has no status subresource: the record is written at once, its result with it, so
// that a run object never exists without its result.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=lbrun,categories=logbench
// +kubebuilder:printcolumn:name="Destination",type=string,JSONPath=`.spec.destination`
// +kubebuilder:printcolumn:name="Clients",type=integer,JSONPath=`.spec.clients`
// +kubebuilder:printcolumn:name="Repeat",type=integer,JSONPath=`.spec.repeat`
// +kubebuilder:printcolumn:name="TPS",type=number,JSONPath=`.status.tps`
// +kubebuilder:printcolumn:name="Benchmark",type=string,JSONPath=`.spec.benchmark`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Error",type=string,JSONPath=`.status.error`
type LoggingBenchmarkRun struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LoggingBenchmarkRunSpec `json:"spec"`
	// Status is the run's result; a failed run holds its error instead of figures.
	// +optional
	Status RepeatResult `json:"status,omitempty"`
}

// LoggingBenchmarkRunList is a list of LoggingBenchmarkRun.
// +kubebuilder:object:root=true
type LoggingBenchmarkRunList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LoggingBenchmarkRun `json:"items"`
}

func init() {
	SchemeBuilder.Register(&LoggingBenchmarkRun{}, &LoggingBenchmarkRunList{})
}
