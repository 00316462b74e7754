package builders

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/shipping"
)

func TestClusterMapsThePostgresSpec(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bench"},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Postgres: v1alpha1.PostgresSpec{
				ImageName:    "ghcr.io/cloudnative-pg/postgresql:17",
				Instances:    1,
				Storage:      v1alpha1.StorageSpec{Size: resource.MustParse("2Gi"), StorageClass: new("fast")},
				NodeSelector: map[string]string{"pool": "db"},
				Tolerations:  []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
				Affinity:     &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}},
				// The workaround of CloudNativePG's sampling, measured as such.
				InstanceManagerLogLevel: "debug",
			},
			Logging: v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll, LinePrefix: "%a "},
		},
	}
	cluster, err := Cluster(benchmark, v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}, "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if cluster.GetName() != "bench-csv" || cluster.GetLabels()[LabelDestination] != "csv" {
		t.Errorf("name %q, labels %v", cluster.GetName(), cluster.GetLabels())
	}
	stringFields := []struct {
		path []string
		want string
	}{
		{[]string{"spec", "imageName"}, "ghcr.io/cloudnative-pg/postgresql:17"},
		{[]string{"spec", "storage", "size"}, "2Gi"},
		{[]string{"spec", "storage", "storageClass"}, "fast"},
		{[]string{"spec", "affinity", "nodeSelector", "pool"}, "db"},
		{[]string{"spec", "postgresql", "parameters", "log_statement"}, "all"},
		{[]string{"spec", "postgresql", "parameters", "log_line_prefix"}, "%a "},
		{[]string{"spec", "logLevel"}, "debug"},
	}
	for _, s := range stringFields {
		if got, _, _ := unstructured.NestedString(cluster.Object, s.path...); got != s.want {
			t.Errorf("%v = %q, want %q", s.path, got, s.want)
		}
	}
	for _, path := range [][]string{
		{"spec", "enableSuperuserAccess"}, {"spec", "postgresql", "enableAlterSystem"},
	} {
		if got, _, _ := unstructured.NestedBool(cluster.Object, path...); !got {
			t.Errorf("%v is not true", path)
		}
	}
	if _, found, _ := unstructured.NestedMap(cluster.Object, "spec", "affinity", "additionalPodAntiAffinity"); !found {
		t.Error("podAntiAffinity is not mapped to additionalPodAntiAffinity")
	}
	if tolerations, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "affinity", "tolerations"); len(
		tolerations,
	) != 1 {
		t.Errorf("tolerations = %v", tolerations)
	}
}

// TestClusterWithMeter: every instance pod gets the meter and shares its process
// namespace with it; a shipping destination's gets its shipper after them.
func TestClusterWithMeter(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"}}
	for _, dest := range []v1alpha1.Destination{
		{Name: "baseline", Type: v1alpha1.DestinationNone},
		{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar,
			Loki: &v1alpha1.LokiSpec{URL: "http://loki:3100"}},
	} {
		cluster, err := Cluster(benchmark, dest, "logbench:test", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		patch := podPatchOf(t, cluster)
		var containers []string
		shared := false
		for _, operation := range patch {
			switch operation.Path {
			case "/spec/shareProcessNamespace":
				shared = string(operation.Value) == "true"
			case "/spec/containers/-":
				var container corev1.Container
				if err := json.Unmarshal(operation.Value, &container); err != nil {
					t.Fatal(err)
				}
				containers = append(containers, container.Name+" "+container.Image)
			}
		}
		want := []string{meter.ContainerName + " logbench:test"}
		if dest.Ships() {
			want = append(want, shipping.ContainerName+" "+ShippingTarget(benchmark, dest).Image())
		}
		if !shared || !slices.Equal(containers, want) {
			t.Errorf("%s: process namespace shared %v, containers %q; want shared, %q", dest.Name, shared, containers, want)
		}
	}
}

// TestClusterWithSyslog: a Syslog destination's pod gets its receiver as a native
// sidecar, started before the postgres container, whose /dev/log is the receiver's
// socket; the agent may set log_destination with ALTER SYSTEM.
func TestClusterWithSyslog(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"}}
	cluster, err := Cluster(benchmark, v1alpha1.Destination{Name: "sys", Type: v1alpha1.DestinationSyslog}, "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var devLog, sidecar bool
	for _, operation := range podPatchOf(t, cluster) {
		switch operation.Path {
		case "/spec/containers/0/volumeMounts/-":
			mount := patchValue[corev1.VolumeMount](t, operation)
			devLog = mount.MountPath == "/dev/log" && mount.SubPath != ""
		case "/spec/initContainers/-":
			container := patchValue[corev1.Container](t, operation)
			sidecar = container.Name == shipping.ContainerName && container.RestartPolicy != nil &&
				*container.RestartPolicy == corev1.ContainerRestartPolicyAlways && container.StartupProbe != nil
		case "/spec/containers/-":
			t.Errorf("the receiver is added as an ordinary container, which may start after postgres")
		}
	}
	alterSystem, _, _ := unstructured.NestedBool(cluster.Object, "spec", "postgresql", "enableAlterSystem")
	if !devLog || !sidecar || !alterSystem {
		t.Errorf("/dev/log mounted %t, receiver a native sidecar with a startup probe %t, ALTER SYSTEM %t; want all",
			devLog, sidecar, alterSystem)
	}
}

// patchOperation is an operation of a pod patch, its value still encoded.
type patchOperation struct {
	Op, Path string
	Value    json.RawMessage
}

// podPatchOf decodes the pod patch annotation of a cluster.
func podPatchOf(t *testing.T, cluster *unstructured.Unstructured) []patchOperation {
	t.Helper()
	var patch []patchOperation
	if err := json.Unmarshal([]byte(cluster.GetAnnotations()[shipping.PodPatchAnnotation]), &patch); err != nil {
		t.Fatalf("%s: pod patch: %v", cluster.GetName(), err)
	}
	return patch
}

// patchValue decodes the value of a pod patch's operation.
func patchValue[T any](t *testing.T, operation patchOperation) T {
	t.Helper()
	var value T
	if err := json.Unmarshal(operation.Value, &value); err != nil {
		t.Fatalf("%s: %v", operation.Path, err)
	}
	return value
}

// TestClusterWithPgaudit: CloudNativePG loads pgaudit for the pgaudit.* parameters
// of an audited destination; the baseline's cluster has none, and runs without it.
func TestClusterWithPgaudit(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"},
		Spec: v1alpha1.LoggingBenchmarkSpec{Logging: v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone,
			Pgaudit: &v1alpha1.PgauditSpec{Log: []v1alpha1.PgauditClass{v1alpha1.PgauditRead, v1alpha1.PgauditWrite},
				LogParameter: true}}},
	}
	audited, err := Cluster(benchmark, v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}, "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	parameters, _, _ := unstructured.NestedStringMap(audited.Object, "spec", "postgresql", "parameters")
	for name, want := range map[string]string{
		"pgaudit.log": "read, write", "pgaudit.log_parameter": "on", "pgaudit.log_relation": "off",
	} {
		if parameters[name] != want {
			t.Errorf("audited cluster: %s = %q, want %q", name, parameters[name], want)
		}
	}
	baseline, err := Cluster(benchmark, v1alpha1.Destination{Name: "baseline", Type: v1alpha1.DestinationNone}, "", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	parameters, _, _ = unstructured.NestedStringMap(baseline.Object, "spec", "postgresql", "parameters")
	if v1alpha1.UsesPgaudit(parameters) {
		t.Errorf("the baseline's cluster loads pgaudit: %v", parameters)
	}
}

func TestValidateClusterNames(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
		Baseline:     v1alpha1.BaselineSpec{Enabled: true},
	}
	if err := ValidateClusterNames("b234567890123456789012345678901234567890", spec); err != nil {
		t.Errorf("a 49-character cluster name was rejected: %v", err)
	}
	if err := ValidateClusterNames("b23456789012345678901234567890123456789012", spec); err == nil {
		t.Error("a 51-character cluster name was accepted")
	}
}

// TestClusterSealsTheSidecars: PostgreSQL writes its files to a volume of their own,
// which the shipper mounts read-only, instead of CloudNativePG's scratch volume with its
// certificates and sockets; neither the meter nor the shipper gets the pod's
// ServiceAccount token.
func TestClusterSealsTheSidecars(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"}}
	dest := v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar}
	cluster, err := Cluster(benchmark, dest, "logbench:test", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	patch := podPatchOf(t, cluster)
	volumes := map[string]corev1.Volume{}
	mounts := map[string][]corev1.VolumeMount{}
	for _, operation := range patch {
		switch operation.Path {
		case "/spec/volumes/-":
			var volume corev1.Volume
			if err := json.Unmarshal(operation.Value, &volume); err != nil {
				t.Fatal(err)
			}
			volumes[volume.Name] = volume
		case "/spec/containers/0/volumeMounts/-":
			var mount corev1.VolumeMount
			if err := json.Unmarshal(operation.Value, &mount); err != nil {
				t.Fatal(err)
			}
			mounts["postgres"] = append(mounts["postgres"], mount)
		case "/spec/containers/-":
			var container corev1.Container
			if err := json.Unmarshal(operation.Value, &container); err != nil {
				t.Fatal(err)
			}
			mounts[container.Name] = container.VolumeMounts
		}
	}
	mountAt := func(container, path string) *corev1.VolumeMount {
		for _, mount := range mounts[container] {
			if mount.MountPath == path {
				return &mount
			}
		}
		return nil
	}
	logs := mountAt("postgres", shipping.LogDirectory)
	if logs == nil || logs.ReadOnly || volumes[logs.Name].EmptyDir == nil {
		t.Errorf("postgres mounts %v: want an emptyDir at %s, read-write", mounts["postgres"], shipping.LogDirectory)
	}
	if shipped := mountAt(shipping.ContainerName, shipping.LogDirectory); shipped == nil || logs == nil ||
		shipped.Name != logs.Name || !shipped.ReadOnly {
		t.Errorf("the shipper mounts %v: want the log volume read-only", mounts[shipping.ContainerName])
	}
	for _, container := range []string{meter.ContainerName, shipping.ContainerName} {
		for _, mount := range mounts[container] {
			if strings.HasPrefix(mount.MountPath, "/controller") {
				t.Errorf("%s mounts %s of CloudNativePG's scratch volume", container, mount.MountPath)
			}
		}
		token := mountAt(container, "/var/run/secrets/kubernetes.io/serviceaccount")
		if token == nil || !token.ReadOnly || volumes[token.Name].EmptyDir == nil {
			t.Errorf("%s mounts %v: want an empty volume where the ServiceAccount token would go", container, mounts[container])
		}
	}
}

// TestClusterPullSecrets: CloudNativePG's instance pods, and so the meter and the
// shipper sidecars the pod patch adds to them, pull with the operator's pull secrets;
// without any, the Cluster names none.
func TestClusterPullSecrets(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"}}
	dest := v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar}
	tests := []struct {
		secrets []corev1.LocalObjectReference
		want    []any
	}{
		{},
		{
			secrets: []corev1.LocalObjectReference{{Name: "registry"}, {Name: "mirror"}},
			want:    []any{map[string]any{"name": "registry"}, map[string]any{"name": "mirror"}},
		},
	}
	for _, test := range tests {
		cluster, err := Cluster(benchmark, dest, "registry.example/logbench:1.2.3", test.secrets, "")
		if err != nil {
			t.Fatal(err)
		}
		got, found, err := unstructured.NestedSlice(cluster.Object, "spec", "imagePullSecrets")
		if err != nil || found != (test.want != nil) || !equality.Semantic.DeepEqual(got, test.want) {
			t.Errorf("spec.imagePullSecrets = %v (found %v, %v), want %v", got, found, err, test.want)
		}
	}
}

// TestClusterRunsAddedContainersAsOtherUsers: the instance pod shares its process
// namespace, so a container running as the postgres user could read PostgreSQL's
// environment and, through its root folder, the pod's ServiceAccount token. Every
// container logbench adds runs as another user, each as its own, without privileges;
// the shipper keeps the postgres group, which reads PostgreSQL's log files.
func TestClusterRunsAddedContainersAsOtherUsers(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"}}
	loki := &v1alpha1.LokiSpec{URL: "http://loki:3100"}
	tests := []struct {
		destination v1alpha1.Destination
		// added are the containers logbench adds, with the group each must run as.
		added map[string]int64
	}{
		{destination: v1alpha1.Destination{Name: "baseline", Type: v1alpha1.DestinationNone},
			added: map[string]int64{meter.ContainerName: meter.UID}},
		{destination: v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar, Loki: loki},
			added: map[string]int64{meter.ContainerName: meter.UID, shipping.ContainerName: shipping.PostgresGID}},
		{destination: v1alpha1.Destination{Name: "otel", Type: v1alpha1.DestinationLoki, Loki: loki,
			Shipper: &v1alpha1.ShipperSpec{Kind: v1alpha1.ShipperOpenTelemetryCollector}},
			added: map[string]int64{meter.ContainerName: meter.UID, shipping.ContainerName: shipping.PostgresGID}},
		{destination: v1alpha1.Destination{Name: "sys", Type: v1alpha1.DestinationSyslog},
			added: map[string]int64{meter.ContainerName: meter.UID, shipping.ContainerName: shipping.PostgresGID}},
	}
	for _, test := range tests {
		t.Run(test.destination.Name, func(t *testing.T) {
			cluster, err := Cluster(benchmark, test.destination, "logbench:test", nil, "")
			if err != nil {
				t.Fatal(err)
			}
			users := map[int64]string{shipping.PostgresUID: "postgres"}
			seen := map[string]bool{}
			for _, operation := range podPatchOf(t, cluster) {
				if operation.Path != "/spec/containers/-" && operation.Path != "/spec/initContainers/-" {
					continue
				}
				var container corev1.Container
				if err := json.Unmarshal(operation.Value, &container); err != nil {
					t.Fatal(err)
				}
				seen[container.Name] = true
				security := container.SecurityContext
				if security == nil || security.RunAsUser == nil || security.RunAsGroup == nil {
					t.Errorf("%s: securityContext %+v, want its own user and group", container.Name, security)
					continue
				}
				if other, taken := users[*security.RunAsUser]; taken {
					t.Errorf("%s runs as user %d, %s's", container.Name, *security.RunAsUser, other)
				}
				users[*security.RunAsUser] = container.Name
				if want := test.added[container.Name]; *security.RunAsGroup != want {
					t.Errorf("%s runs as group %d, want %d", container.Name, *security.RunAsGroup, want)
				}
				if security.RunAsNonRoot == nil || !*security.RunAsNonRoot || *security.RunAsUser == 0 ||
					security.AllowPrivilegeEscalation == nil || *security.AllowPrivilegeEscalation ||
					security.Privileged == nil || *security.Privileged || security.Capabilities == nil ||
					!slices.Equal(security.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(security.Capabilities.Add) > 0 {
					t.Errorf("%s: securityContext %+v (capabilities %+v), want non-root, unprivileged, every capability dropped",
						container.Name, security, security.Capabilities)
				}
			}
			for name := range test.added {
				if !seen[name] {
					t.Errorf("the pod patch adds no %s", name)
				}
			}
		})
	}
}

// TestClusterWithCounter: with a counter every cluster, the baseline's too, preloads
// logbench_counter after the libraries CloudNativePG loads for its parameters, and an
// extension image is mounted as CloudNativePG's image volume extension.
func TestClusterWithCounter(t *testing.T) {
	zero := int32(0)
	logging := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone,
		AutoExplain: &v1alpha1.AutoExplainSpec{MinDuration: 0},
		Pgaudit:     &v1alpha1.PgauditSpec{Log: []v1alpha1.PgauditClass{v1alpha1.PgauditRead}}}
	csv := v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}
	baseline := v1alpha1.Destination{Name: "baseline", Type: v1alpha1.DestinationNone}
	sampled := v1alpha1.Destination{Name: "sampled", Type: v1alpha1.DestinationCSVLog,
		Logging: &v1alpha1.LoggingOverride{MinDurationSample: &zero}}
	operand := &v1alpha1.CounterSpec{Source: v1alpha1.CounterInOperandImage}
	image := &v1alpha1.CounterSpec{Source: v1alpha1.CounterInExtensionImage,
		ExtensionImage: "ghcr.io/logbench/logbench-counter:18"}
	for _, tc := range []struct {
		name       string
		counter    *v1alpha1.CounterSpec
		logging    v1alpha1.LoggingSpec
		dest       v1alpha1.Destination
		libraries  []string
		extensions []any
	}{
		{name: "no counter", logging: logging, dest: csv},
		{name: "operand image, auto_explain and pgaudit", counter: operand, logging: logging, dest: csv,
			libraries: []string{"pgaudit", "auto_explain", "logbench_counter"}},
		{name: "operand image, the baseline", counter: operand, logging: logging, dest: baseline,
			libraries: []string{"logbench_counter"}},
		{name: "operand image, sampling only", counter: operand, dest: sampled,
			logging: v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone}, libraries: []string{"logbench_counter"}},
		{name: "extension image", counter: image, logging: logging, dest: baseline,
			libraries: []string{"logbench_counter"}, extensions: []any{map[string]any{
				"name": "logbench-counter", "image": map[string]any{"reference": "ghcr.io/logbench/logbench-counter:18"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			benchmark := &v1alpha1.LoggingBenchmark{
				ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"},
				Spec: v1alpha1.LoggingBenchmarkSpec{Postgres: v1alpha1.PostgresSpec{Counter: tc.counter},
					Logging: tc.logging, Destinations: []v1alpha1.Destination{tc.dest}},
			}
			cluster, err := Cluster(benchmark, tc.dest, "", nil, "")
			if err != nil {
				t.Fatal(err)
			}
			libraries, _, _ := unstructured.NestedStringSlice(cluster.Object, "spec", "postgresql", "shared_preload_libraries")
			if !slices.Equal(libraries, tc.libraries) {
				t.Errorf("shared_preload_libraries = %q, want %q", libraries, tc.libraries)
			}
			extensions, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "postgresql", "extensions")
			if !equality.Semantic.DeepEqual(extensions, tc.extensions) {
				t.Errorf("extensions = %v, want %v", extensions, tc.extensions)
			}
		})
	}
}

var rsyslogDestination = v1alpha1.Destination{Name: "rsys", Type: v1alpha1.DestinationSyslog,
	Syslog: &v1alpha1.SyslogSpec{Receiver: v1alpha1.SyslogRsyslog}}

// TestClusterWithRsyslog: an Rsyslog destination's pod gets rsyslogd as a native
// sidecar in the operator's rsyslog image, unprivileged, started once its socket exists,
// and the postgres container sees rsyslog's socket as /dev/log and its files read-only.
func TestClusterWithRsyslog(t *testing.T) {
	const operatorsImage = "registry.example/rsyslog:8.2302.0"
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"}}
	cluster, err := Cluster(benchmark, rsyslogDestination, "", nil, operatorsImage)
	if err != nil {
		t.Fatal(err)
	}
	var postgresMounts []corev1.VolumeMount
	var receiver *corev1.Container
	for _, operation := range podPatchOf(t, cluster) {
		switch operation.Path {
		case "/spec/containers/0/volumeMounts/-":
			postgresMounts = append(postgresMounts, patchValue[corev1.VolumeMount](t, operation))
		case "/spec/initContainers/-":
			receiver = new(patchValue[corev1.Container](t, operation))
		case "/spec/containers/-":
			t.Errorf("a container other than the meter is added: %s", operation.Value)
		}
	}
	if receiver == nil {
		t.Fatal("no receiver sidecar")
	}
	if receiver.Image != operatorsImage || !slices.Equal(receiver.Args[:3], []string{"-n", "-i", "NONE"}) {
		t.Errorf("receiver runs %s %q, want rsyslogd of %s in the foreground without a pid file",
			receiver.Image, receiver.Args, operatorsImage)
	}
	if receiver.RestartPolicy == nil || *receiver.RestartPolicy != corev1.ContainerRestartPolicyAlways ||
		receiver.StartupProbe == nil || receiver.StartupProbe.Exec == nil || len(receiver.Ports) != 0 {
		t.Errorf("receiver: restart %v, startup probe %+v, ports %v; want a native sidecar started by its socket, "+
			"serving no port", receiver.RestartPolicy, receiver.StartupProbe, receiver.Ports)
	}
	if security := receiver.SecurityContext; security == nil || *security.RunAsUser != shipping.ShipperUID ||
		*security.RunAsGroup != shipping.PostgresGID || !*security.ReadOnlyRootFilesystem {
		t.Errorf("receiver's security context %+v, want the shipper's user in postgres's group, read-only root",
			security)
	}
	var devLog, files bool
	for _, mount := range postgresMounts {
		devLog = devLog || mount.MountPath == "/dev/log" && mount.SubPath != ""
		files = files || mount.MountPath == "/logbench-syslog" && mount.ReadOnly
	}
	if !devLog || !files {
		t.Errorf("postgres mounts %+v: /dev/log %t, rsyslog's files read-only %t; want both", postgresMounts, devLog, files)
	}
}
