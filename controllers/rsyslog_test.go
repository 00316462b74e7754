package controllers

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/shipping"
)

var rsyslogDestination = v1alpha1.Destination{Name: "rsys", Type: v1alpha1.DestinationSyslog,
	Syslog: &v1alpha1.SyslogSpec{Receiver: v1alpha1.SyslogRsyslog}}

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
		target := builders.ShippingTarget(benchmark, benchmark.Spec.Destinations[0])
		wantConfig, err := shipping.Config(target)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(wantConfig)).To(ContainSubstring(`module(load="imuxsock"`))
		configMap := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: builders.ShipperConfigMapName("rsys-rsys")},
			configMap)).To(Succeed())
		Expect(configMap.Data).To(Equal(map[string]string{shipping.ConfigKey: string(wantConfig)}))
		wantPatch, err := json.Marshal(slices.Concat(shipping.InstancePodPatch(), builders.MeterPatch(testAgentImage),
			shipping.PodPatch(target, builders.ShipperConfigMapName("rsys-rsys"))))
		Expect(err).NotTo(HaveOccurred())
		Expect(cluster.GetAnnotations()).To(HaveKeyWithValue(shipping.PodPatchAnnotation, string(wantPatch)))
	})
})
