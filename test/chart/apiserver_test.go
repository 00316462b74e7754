package chart_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/testenv/controlplane"
)

// The ServiceMonitor and PrometheusRule CRDs come from the Prometheus Operator release
// the local e2e cluster runs (PROMETHEUS_OPERATOR_VERSION in hack/versions.env), read
// from the Go module cache.
const prometheusOperatorModule = "github.com/prometheus-operator/prometheus-operator"

var prometheusOperatorCRDs = []string{
	"example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml",
	"example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
}

// TestAgainstAPIServer submits every rendered object to a real API server with a
// server-side apply dry run, so that a field the schema does not know or a value it
// refuses fails the test, and creates the operator's pod (dry run too) in a namespace
// enforcing the restricted Pod Security Standard. Then it installs, upgrades and
// uninstalls the chart with helm, as a user would.
func TestAgainstAPIServer(t *testing.T) {
	helmBinary(t) // skips the test before the API server starts
	k8sClient, kubeconfig := startAPIServer(t)
	ctx := t.Context()
	for _, namespace := range append([]string{releaseNamespace, unwatchedNamespace}, watchedNamespaces...) {
		createNamespace(ctx, t, k8sClient, namespace)
	}

	for _, values := range valueSets {
		t.Run(values.name, func(t *testing.T) {
			objects := render(t, values.set)
			for _, object := range objects {
				err := k8sClient.Apply(ctx, client.ApplyConfigurationFromUnstructured(object),
					client.DryRunAll, client.FieldOwner("chart-test"), client.ForceOwnership)
				if err != nil {
					t.Errorf("%s %s: %v", object.GetKind(), object.GetName(), err)
				}
			}
			createOperatorPod(ctx, t, k8sClient, findDeployment(t, objects))
		})
	}

	t.Run("helm install", func(t *testing.T) {
		release := []string{releaseName, chartDir(t), "--kubeconfig", kubeconfig, "--namespace", releaseNamespace}
		steps := [][]string{
			append([]string{"install"}, release...),
			append(append([]string{"upgrade"}, release...), setArgs(valueSet(t, "monitoring"))...),
		}
		for _, step := range steps {
			if _, err := runHelm(t, step...); err != nil {
				t.Fatal(err)
			}
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: "loggingbenchmarks.bench.logbench.io"}, &crd); err != nil {
			t.Errorf("helm install left no LoggingBenchmark CRD: %v", err)
		}
		for _, access := range operatorAccess {
			access.Namespace = unwatchedNamespace
			if !operatorMay(ctx, t, k8sClient, access) {
				t.Errorf("watching every namespace, the operator may not %s %s/%s in %s",
					access.Verb, access.Group, access.Resource, access.Namespace)
			}
		}
		if _, err := runHelm(t, "uninstall", releaseName, "--kubeconfig", kubeconfig, "--namespace", releaseNamespace,
			"--wait"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("helm install watching namespaces", func(t *testing.T) {
		install := append([]string{"install", releaseName, chartDir(t), "--kubeconfig", kubeconfig,
			"--namespace", releaseNamespace}, setArgs(valueSet(t, "namespaced"))...)
		if _, err := runHelm(t, install...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := runHelm(t, "uninstall", releaseName, "--kubeconfig", kubeconfig, "--namespace",
				releaseNamespace, "--wait"); err != nil {
				t.Error(err)
			}
		})
		for _, namespace := range append([]string{unwatchedNamespace}, watchedNamespaces...) {
			want := slices.Contains(watchedNamespaces, namespace)
			for _, access := range operatorAccess {
				access.Namespace = namespace
				if allowed := operatorMay(ctx, t, k8sClient, access); allowed != want {
					t.Errorf("the operator may %s %s/%s in %s: %v, want %v",
						access.Verb, access.Group, access.Resource, namespace, allowed, want)
				}
			}
		}

		// docs/troubleshooting.md, a second release in the same cluster: one release per
		// cluster, since the agent's ClusterRole has a fixed name.
		second := append([]string{"install", "second", chartDir(t), "--kubeconfig", kubeconfig,
			"--namespace", unwatchedNamespace}, setArgs(valueSet(t, "namespaced"))...)
		_, err := runHelm(t, second...)
		if err == nil {
			_, _ = runHelm(t, "uninstall", "second", "--kubeconfig", kubeconfig, "--namespace", unwatchedNamespace)
			t.Fatal("a second release installed beside the first")
		}
		if want := `ClusterRole "logbench-agent" in namespace "" exists and cannot be imported into the current release`; !strings.Contains(err.Error(), want) {
			t.Errorf("the second release failed with %v, want it to name %q", err, want)
		}
	})
}

// unwatchedNamespace is a namespace the namespaced value set does not watch.
const unwatchedNamespace = "elsewhere"

// operatorAccess are requests the operator makes in a benchmark's namespace.
var operatorAccess = []authorizationv1.ResourceAttributes{
	{Verb: "watch", Group: "bench.logbench.io", Resource: "loggingbenchmarks"},
	{Verb: "patch", Group: "bench.logbench.io", Resource: "loggingbenchmarks", Subresource: "status"},
	{Verb: "create", Group: "postgresql.cnpg.io", Resource: "clusters"},
	{Verb: "create", Group: "apps", Resource: "deployments"},
	{Verb: "delete", Group: "apps", Resource: "deployments"},
	{Verb: "patch", Group: "batch", Resource: "jobs"},
	{Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "logbench-agent"},
	{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles", Name: "logbench-runner"},
}

// operatorMay asks the API server whether the operator's ServiceAccount may make the
// request.
func operatorMay(
	ctx context.Context, t *testing.T, k8sClient client.Client, access authorizationv1.ResourceAttributes,
) bool {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + releaseNamespace + ":" + releaseName,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + releaseNamespace},
		ResourceAttributes: &access,
	}}
	if err := k8sClient.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}

// startAPIServer starts an envtest control plane, stopped when the test ends, that
// holds the Prometheus Operator's CRDs but not logbench's, which the chart installs. It returns
// a client and a kubeconfig file for helm, both of a cluster administrator.
func startAPIServer(t *testing.T) (client.Client, string) {
	t.Helper()
	environment, err := controlplane.New()
	if err != nil {
		t.Fatal(err)
	}
	prometheusOperatorVersion := "v" + testenv.PinnedVersion(t, "PROMETHEUS_OPERATOR_VERSION")
	for _, file := range prometheusOperatorCRDs {
		crd, err := testenv.ModuleFile(prometheusOperatorModule, prometheusOperatorVersion, file)
		if err != nil {
			t.Fatal(err)
		}
		environment.CRDDirectoryPaths = append(environment.CRDDirectoryPaths, crd)
	}
	config := controlplane.Start(t, environment)

	scheme := runtime.NewScheme()
	for _, addToScheme := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := addToScheme(scheme); err != nil {
			t.Fatal(err)
		}
	}
	k8sClient, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	admin, err := environment.AddUser(envtest.User{Name: "chart-test", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return k8sClient, path
}

// createNamespace creates a namespace that enforces the restricted Pod Security
// Standard, as a hardened cluster's namespaces do.
func createNamespace(ctx context.Context, t *testing.T, k8sClient client.Client, name string) {
	t.Helper()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	if err := k8sClient.Create(ctx, namespace); err != nil {
		t.Fatal(err)
	}
}

// createOperatorPod creates, in a dry run, the pod the rendered Deployment would start,
// which the Pod Security admission refuses unless it meets the restricted standard.
func createOperatorPod(
	ctx context.Context, t *testing.T, k8sClient client.Client, rendered *unstructured.Unstructured,
) {
	t.Helper()
	deployment := toDeployment(t, rendered)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: deployment.Namespace, Name: deployment.Name},
		Spec:       deployment.Spec.Template.Spec,
	}
	if err := k8sClient.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("the operator's pod: %v", err)
	}
}
