//go:build e2e

package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
)

// The admission policy the chart installs decides with the rights of whoever creates a
// benchmark: a ServiceAccount bound only to the chart's editor ClusterRole may not name
// a Secret it cannot read, an image outside allowedImages, nor a toleration or node
// selector outside placement (hack/install-logbench.sh allows
// config/samples/production.yaml's node pool), nor configuration input that could end a
// line or a quoted value in postgresql.conf. Every create but one is a dry run:
// admission answers it as it would a real one, and no benchmark runs; the one benchmark
// created, named next to another CloudNativePG cluster, must fail before it creates
// anything.
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
		// The API server's authorizer sees RBAC objects through its informers, a moment
		// after they are created (and after the last spec's were deleted): each spec
		// starts once it grants the editor the rights the bindings above give.
		Eventually(func(g Gomega) {
			for _, attributes := range []authorizationv1.ResourceAttributes{
				{Namespace: benchmarkNamespace, Verb: "create", Group: benchv1alpha1.GroupVersion.Group,
					Resource: "loggingbenchmarks"},
				{Namespace: benchmarkNamespace, Verb: "get", Resource: "secrets", Name: readableSecret},
			} {
				review, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx,
					&authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
						User: impersonated.Impersonate.UserName, Groups: impersonated.Impersonate.Groups,
						ResourceAttributes: &attributes,
					}}, metav1.CreateOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(review.Status.Allowed).To(BeTrue(), "the editor may %s %s %s", attributes.Verb,
					attributes.Resource, attributes.Name)
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
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

	It("refuses configuration input that could end a line or a quoted value, saying why", func(ctx SpecContext) {
		const badName, badValue = "parameter names must be PostgreSQL parameter names",
			"parameter values must hold no control characters"
		for _, refused := range []struct {
			parameters map[string]benchv1alpha1.ParameterValue
			message    string
		}{
			{map[string]benchv1alpha1.ParameterValue{"archive_command ": "true"}, badName},
			{map[string]benchv1alpha1.ParameterValue{"archive_command": "true"}, "run a shell command"},
			{map[string]benchv1alpha1.ParameterValue{"work_mem": "64MB\narchive_command = 'true'"}, badValue},
			{map[string]benchv1alpha1.ParameterValue{"work_mem": "64MB\\"}, badValue},
			{map[string]benchv1alpha1.ParameterValue{"work_mem": "64MB' "}, badValue},
		} {
			benchmark := newBenchmark("admission-parameters")
			benchmark.Spec.Postgres.Parameters = refused.parameters
			Expect(createAsEditor(ctx, benchmark)).To(MatchError(ContainSubstring(refused.message)),
				"parameters %q", refused.parameters)
		}
		benchmark := newBenchmark("admission-line-prefix")
		benchmark.Spec.Logging.LinePrefix = "%m %a\nlog_destination = 'syslog'"
		Expect(createAsEditor(ctx, benchmark)).To(MatchError(ContainSubstring("linePrefix must hold no control characters")))

		benchmark = newBenchmark("admission-parameters-accepted")
		benchmark.Spec.Postgres.Parameters = map[string]benchv1alpha1.ParameterValue{"work_mem": "64MB"}
		Expect(createAsEditor(ctx, benchmark)).To(Succeed())
	})

	// A benchmark named next to a CloudNativePG cluster it does not own fails before it
	// creates anything: no NetworkPolicy of it selects the other cluster's pods.
	It("creates nothing when a name it needs belongs to another cluster", func(ctx SpecContext) {
		const name = "admission-taken"
		foreign := &unstructured.Unstructured{}
		foreign.SetGroupVersionKind(cloudnativepg.ClusterGVK)
		foreign.SetNamespace(benchmarkNamespace)
		foreign.SetName(name + "-csvlog")
		Expect(unstructured.SetNestedField(foreign.Object, int64(1), "spec", "instances")).To(Succeed())
		Expect(unstructured.SetNestedField(foreign.Object, postgresImage, "spec", "imageName")).To(Succeed())
		Expect(unstructured.SetNestedField(foreign.Object, "1Gi", "spec", "storage", "size")).To(Succeed())
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, foreign))).To(Succeed())
		})

		benchmark := newBenchmark(name)
		Expect(editor.Create(ctx, benchmark)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, benchmark))).To(Succeed())
		})
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), benchmark)).To(Succeed())
			degraded := meta.FindStatusCondition(benchmark.Status.Conditions, benchv1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Reason).To(Equal(benchv1alpha1.ReasonForeignObject))
			g.Expect(degraded.Message).To(ContainSubstring("Cluster " + benchmarkNamespace + "/" + foreign.GetName()))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		var policies networkingv1.NetworkPolicyList
		Expect(k8sClient.List(ctx, &policies, client.InNamespace(benchmarkNamespace))).To(Succeed())
		for _, policy := range policies.Items {
			Expect(policy.Labels).NotTo(HaveKeyWithValue(builders.LabelBenchmark, name),
				"NetworkPolicy %s belongs to the refused benchmark", policy.Name)
			Expect(policy.Name).NotTo(HavePrefix(name+"-"), "NetworkPolicy %s", policy.Name)
		}
		clusters := &unstructured.UnstructuredList{}
		clusters.SetGroupVersionKind(cloudnativepg.ClusterGVK.GroupVersion().WithKind("ClusterList"))
		Expect(k8sClient.List(ctx, clusters, client.InNamespace(benchmarkNamespace))).To(Succeed())
		for _, cluster := range clusters.Items {
			if cluster.GetName() != foreign.GetName() {
				Expect(cluster.GetName()).NotTo(HavePrefix(name+"-"), "the refused benchmark created Cluster %s", cluster.GetName())
			}
		}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
		Expect(foreign.GetOwnerReferences()).To(BeEmpty())
	})

	It("accepts a benchmark naming only what the user may use", func(ctx SpecContext) {
		benchmark := newBenchmark("admission-accepted")
		benchmark.Spec.Destinations = append(benchmark.Spec.Destinations, lokiWithToken(readableSecret))
		Expect(createAsEditor(ctx, benchmark)).To(Succeed())
	})
})
