//go:build e2e

package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
)

// The admission policy the chart installs decides with the rights of whoever creates a
// benchmark: a ServiceAccount bound only to the chart's editor ClusterRole may not name
// a Secret it cannot read, an image outside allowedImages, nor a toleration or node
// selector outside placement (hack/install-logbench.sh allows
// config/samples/production.yaml's node pool). Every create is a dry run: admission
// answers it as it would a real one, and no benchmark runs.
var _ = Describe("admission with the requester's rights", func() {
	const (
		editorAccount    = "benchmark-editor"
		readableSecret   = "admission-readable"
		unreadableSecret = "admission-unreadable"
	)
	var editor client.Client

	BeforeEach(func(ctx SpecContext) {
		meta := func(name string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: benchmarkNamespace, Name: name}
		}
		subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: benchmarkNamespace, Name: editorAccount}}
		for _, object := range []client.Object{
			&corev1.Secret{ObjectMeta: meta(readableSecret), StringData: map[string]string{"token": "readable"}},
			&corev1.Secret{ObjectMeta: meta(unreadableSecret), StringData: map[string]string{"token": "unreadable"}},
			&corev1.ServiceAccount{ObjectMeta: meta(editorAccount)},
			&rbacv1.RoleBinding{
				ObjectMeta: meta(editorAccount),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole",
					Name: "logbench-loggingbenchmark-editor"},
				Subjects: subjects,
			},
			&rbacv1.Role{ObjectMeta: meta(editorAccount + "-secret"), Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{readableSecret},
				Verbs: []string{"get"},
			}}},
			&rbacv1.RoleBinding{
				ObjectMeta: meta(editorAccount + "-secret"),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: editorAccount + "-secret"},
				Subjects:   subjects,
			},
		} {
			Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, object))).To(Succeed())
			DeferCleanup(func(ctx SpecContext) {
				Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, object))).To(Succeed())
			})
		}
		impersonated := rest.CopyConfig(restConfig)
		impersonated.Impersonate = rest.ImpersonationConfig{
			UserName: "system:serviceaccount:" + benchmarkNamespace + ":" + editorAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + benchmarkNamespace,
				"system:authenticated"},
		}
		var err error
		editor, err = client.New(impersonated, client.Options{Scheme: k8sClient.Scheme()})
		Expect(err).NotTo(HaveOccurred())
	})

	lokiWithToken := func(secret string) benchv1alpha1.Destination {
		return benchv1alpha1.Destination{Name: "loki", Type: benchv1alpha1.DestinationLoki,
			Loki: &benchv1alpha1.LokiSpec{URL: lokiURL, Auth: &benchv1alpha1.LokiAuth{
				BearerToken: &benchv1alpha1.SecretKeyRef{SecretName: benchv1alpha1.SecretName(secret), Key: "token"},
			}}}
	}
	createAsEditor := func(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) error {
		return editor.Create(ctx, benchmark, client.DryRunAll)
	}

	It("refuses a Secret the user may not read, saying so", func(ctx SpecContext) {
		benchmark := newBenchmark("admission-secret")
		benchmark.Spec.Destinations = []benchv1alpha1.Destination{lokiWithToken(unreadableSecret)}
		err := createAsEditor(ctx, benchmark)
		Expect(err).To(MatchError(And(
			ContainSubstring(unreadableSecret),
			ContainSubstring(editorAccount+" may not get all of them in namespace "+benchmarkNamespace))))
	})

	It("refuses an image outside allowedImages, saying which", func(ctx SpecContext) {
		benchmark := newBenchmark("admission-image")
		benchmark.Spec.Postgres.ImageName = "registry.example/postgresql:18"
		Expect(createAsEditor(ctx, benchmark)).To(MatchError(And(
			ContainSubstring("registry.example/postgresql:18"), ContainSubstring("are not allowed"))))

		benchmark = newBenchmark("admission-shipper-image")
		benchmark.Spec.Destinations = []benchv1alpha1.Destination{{Name: "fb", Type: benchv1alpha1.DestinationFluentBitSidecar,
			Shipper: &benchv1alpha1.ShipperSpec{Kind: benchv1alpha1.ShipperFluentBit, Image: "registry.example/fluent-bit:5"}}}
		Expect(createAsEditor(ctx, benchmark)).To(MatchError(ContainSubstring("registry.example/fluent-bit:5")))
	})

	It("refuses a toleration or a node selector the administrator has not allowed, saying which", func(ctx SpecContext) {
		benchmark := newBenchmark("admission-toleration")
		benchmark.Spec.Postgres.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane",
			Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
		Expect(createAsEditor(ctx, benchmark)).To(MatchError(And(
			ContainSubstring("node-role.kubernetes.io/control-plane"),
			ContainSubstring("placement.allowedTolerations"))))

		benchmark = newBenchmark("admission-node-selector")
		benchmark.Spec.Postgres.NodeSelector = map[string]string{"node-role.kubernetes.io/control-plane": ""}
		Expect(createAsEditor(ctx, benchmark)).To(MatchError(And(
			ContainSubstring("node-role.kubernetes.io/control-plane="),
			ContainSubstring("placement.allowedNodeSelectors"))))
	})

	It("accepts a placement within the allowed node pool", func(ctx SpecContext) {
		benchmark := newBenchmark("admission-node-pool")
		benchmark.Spec.Postgres.NodeSelector = map[string]string{"node-pool": "databases"}
		benchmark.Spec.Postgres.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual,
			Value: "databases", Effect: corev1.TaintEffectNoSchedule}}
		Expect(createAsEditor(ctx, benchmark)).To(Succeed())
	})

	It("accepts a benchmark naming only what the user may use", func(ctx SpecContext) {
		benchmark := newBenchmark("admission-accepted")
		benchmark.Spec.Destinations = append(benchmark.Spec.Destinations, lokiWithToken(readableSecret))
		Expect(createAsEditor(ctx, benchmark)).To(Succeed())
	})
})
