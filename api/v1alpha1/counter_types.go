package v1alpha1

// CounterSpec loads the logbench_counter extension into every cluster of the benchmark,
// the baseline's too, so that the overhead compares servers that differ only in their
// logging. With it, each run's expected records are the server's own count of what it
// logged for the run's sessions ("counted at the source"), and spec.logging and a
// destination's logging may set what no model predicts: sampling (minDurationSample,
// statementSampleRate, transactionSampleRate), autoExplain, lockWaits and tempFiles.
//
// The operator adds logbench_counter to the clusters' shared_preload_libraries, after
// the libraries CloudNativePG loads for the parameters (auto_explain, pgaudit), so that
// it counts what they let through; the agent creates the extension in the application
// database before the first run.
// +kubebuilder:validation:XValidation:rule="self.source == 'ExtensionImage' ? has(self.extensionImage) : !has(self.extensionImage)",message="extensionImage is required with source ExtensionImage, and only with it"
type CounterSpec struct {
	// Source says where the servers find the extension's library, control file and SQL
	// script.
	// +required
	Source CounterSource `json:"source"`

	// ExtensionImage is the image holding the extension, mounted by CloudNativePG as an
	// image volume (spec.postgresql.extensions of the Cluster): its library in /lib and
	// its control file and SQL script in /share/extension, built for the operand image's
	// PostgreSQL major version, distribution and architecture. The image allowlist
	// applies to it as to imageName.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	ExtensionImage string `json:"extensionImage,omitempty"`
}

// CounterSource is where the clusters' servers find the logbench_counter extension.
// +kubebuilder:validation:Enum=OperandImage;ExtensionImage
type CounterSource string

const (
	// CounterInOperandImage: the operand image (imageName) has the extension installed in
	// PostgreSQL's own directories, as logbench's PostgreSQL images do.
	CounterInOperandImage CounterSource = "OperandImage"
	// CounterInExtensionImage: CloudNativePG mounts extensionImage as an image volume and
	// adds it to extension_control_path and dynamic_library_path. This needs PostgreSQL 18
	// or later, CloudNativePG 1.27 or later, and Kubernetes 1.35 or later (1.33 and 1.34
	// with the ImageVolume feature gate) with a container runtime that mounts image
	// volumes (containerd 2.1, CRI-O 1.31).
	CounterInExtensionImage CounterSource = "ExtensionImage"
)
