package controllers

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
)

var rsyslogDestination = v1alpha1.Destination{Name: "rsys", Type: v1alpha1.DestinationSyslog,
	Syslog: &v1alpha1.SyslogSpec{Receiver: v1alpha1.SyslogRsyslog}}

// TestBuildClusterWithRsyslog: an Rsyslog destination's pod gets rsyslogd as a native
// sidecar in the operator's rsyslog image, unprivileged, started once its socket exists,
// and the postgres container sees rsyslog's socket as /dev/log and its files read-only.
func TestBuildClusterWithRsyslog(t *testing.T) {
	const operatorsImage = "registry.example/rsyslog:8.2302.0"
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"}}
	cluster, err := buildCluster(benchmark, rsyslogDestination, "", nil, operatorsImage)
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

var _ = Describe("LoggingBenchmark reconciler with an Rsyslog receiver", func() {
	It("writes rsyslog's configuration before the cluster that runs it", func() {
		ctx := context.Background()
		namespace := newNamespace()
		benchmark := newBenchmark(namespace, "rsys", v1alpha1.CleanupAlways)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Destinations = []v1alpha1.Destination{rsyslogDestination}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		DeferCleanup(startOperator(time.Minute))

		cluster := getCluster(namespace, "rsys-rsys")
		target := shippingTarget(benchmark, benchmark.Spec.Destinations[0])
		wantConfig, err := shipping.Config(target)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(wantConfig)).To(ContainSubstring(`module(load="imuxsock"`))
		configMap := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: shipperConfigMapName("rsys-rsys")},
			configMap)).To(Succeed())
		Expect(configMap.Data).To(Equal(map[string]string{shipping.ConfigKey: string(wantConfig)}))
		wantPatch, err := json.Marshal(slices.Concat(shipping.InstancePodPatch(), meterPatch(testAgentImage),
			shipping.PodPatch(target, shipperConfigMapName("rsys-rsys"))))
		Expect(err).NotTo(HaveOccurred())
		Expect(cluster.GetAnnotations()).To(HaveKeyWithValue(shipping.PodPatchAnnotation, string(wantPatch)))
	})
})
