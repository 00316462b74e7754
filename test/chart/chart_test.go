// Package chart_test checks the Helm chart charts/logbench: it lints and renders with
// every optional part, its objects pass the API server's validation and the restricted
// Pod Security Standard, its copies of the CRDs and ClusterRole are those config/ holds,
// and its Grafana dashboard is well formed.
package chart_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/internal/testenv"
)

const (
	releaseName      = "logbench"
	releaseNamespace = "logbench-system"
)

// valueSets are the configurations the tests render: the defaults, the monitoring
// integrations on, the scheduling and naming knobs turned, and benchmarks allowed
// config/samples/production.yaml's node pool.
var valueSets = []struct {
	name string
	set  []string
}{
	{name: "defaults"},
	{name: "monitoring", set: []string{
		"serviceMonitor.enabled=true",
		"serviceMonitor.labels.release=kube-prometheus-stack",
		"serviceMonitor.interval=30s",
		"prometheusRule.enabled=true",
		"prometheusRule.labels.release=kube-prometheus-stack",
		"grafanaDashboard.enabled=true",
		"grafanaDashboard.annotations.grafana_folder=Benchmarks",
	}},
	{name: "customised", set: []string{
		"fullnameOverride=bench",
		"replicas=2",
		"image.repository=registry.example/logbench",
		"image.tag=1.2.3",
		"agent.image=registry.example/logbench-agent:1.2.3",
		"imagePullSecrets[0].name=registry",
		"serviceAccount.annotations.example\\.com/role=logbench",
		"nodeSelector.kubernetes\\.io/os=linux",
		"tolerations[0].key=dedicated",
		"tolerations[0].operator=Exists",
		"metrics.port=9090",
		"clusterReadyTimeout=20m",
		"userRoles.aggregateToDefaultRoles=true",
	}},
	{name: "namespaced", set: []string{"watchNamespaces={" + strings.Join(watchedNamespaces, ",") + "}"}},
	{name: "production pool", set: productionPool},
}

// productionPool allows benchmarks config/samples/production.yaml's node pool and storage
// class, as docs/installation.md shows.
var productionPool = []string{
	"placement.allowedTolerations[0].key=dedicated",
	"placement.allowedTolerations[0].operator=Equal",
	"placement.allowedTolerations[0].value=databases",
	"placement.allowedTolerations[0].effect=NoSchedule",
	"placement.allowedNodeSelectors[0]=node-pool=databases",
	"placement.allowedStorageClasses[0]=fast-ssd",
}

// valueSet returns the --set values of the value set called name.
func valueSet(t *testing.T, name string) []string {
	t.Helper()
	for _, values := range valueSets {
		if values.name == name {
			return values.set
		}
	}
	t.Fatalf("no value set %q", name)
	return nil
}

// watchedNamespaces are the namespaces of the namespaced value set, which the API
// server test creates.
var watchedNamespaces = []string{"bench-a", "bench-b"}

func TestLint(t *testing.T) {
	for _, values := range valueSets {
		t.Run(values.name, func(t *testing.T) {
			if _, err := runHelm(t, append([]string{"lint", "--strict", chartDir(t)}, setArgs(values.set)...)...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRejectedValues checks that values.schema.json and the templates refuse values that
// would install a broken or surprising operator, saying which value is wrong.
func TestRejectedValues(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{name: "unknown top-level key", set: []string{"imageTag=1.0"}, want: "imageTag"},
		{name: "unknown nested key", set: []string{"image.sha=0"}, want: "sha"},
		{name: "image digest", set: []string{"image.digest=sha256:0"}, want: "digest"},
		{name: "pull secret name", set: []string{"imagePullSecrets[0].name=a,b"}, want: "imagePullSecrets"},
		{name: "pull policy", set: []string{"image.pullPolicy=Sometimes"}, want: "pullPolicy"},
		{name: "no replica", set: []string{"replicas=0"}, want: "replicas"},
		{name: "port out of range", set: []string{"metrics.port=70000"}, want: "port"},
		{name: "scrape interval", set: []string{"serviceMonitor.interval=30 seconds"}, want: "interval"},
		{name: "ready timeout", set: []string{"clusterReadyTimeout=ten minutes"}, want: "clusterReadyTimeout"},
		{name: "watched namespace name", set: []string{"watchNamespaces={Bench_A}"}, want: "watchNamespaces"},
		{
			name: "replicas without leader election",
			set:  []string{"replicas=2", "leaderElection.enabled=false"},
			want: "leaderElection.enabled",
		},
		{name: "no service account", set: []string{"serviceAccount.create=false"}, want: "serviceAccount.name"},
		// A prefix must end where a registry, repository or tag does, or ghcr.io/org would
		// allow ghcr.io/org-evil/.
		{name: "image prefix ending in a name", set: []string{"allowedImages={ghcr.io/cloudnative-pg}"},
			want: "allowedImages"},
		{name: "image prefix with a space", set: []string{"allowedImages={ghcr.io/ x/}"}, want: "allowedImages"},
		{name: "toleration without key", set: []string{"placement.allowedTolerations[0].operator=Exists"},
			want: "key"},
		{name: "toleration effect", set: []string{"placement.allowedTolerations[0].key=dedicated",
			"placement.allowedTolerations[0].effect=Always"}, want: "effect"},
		{name: "node selector without value", set: []string{"placement.allowedNodeSelectors={node-pool}"},
			want: "allowedNodeSelectors"},
		{name: "unknown placement key", set: []string{"placement.allowedNodes={a}"}, want: "allowedNodes"},
		{name: "no CloudNativePG namespace", set: []string{"networkPolicy.cloudNativePG.namespace="},
			want: "namespace"},
		{name: "scraper namespace name", set: []string{"networkPolicy.metricsScraper.namespace=Monitoring"},
			want: "namespace"},
		{name: "scraper label", set: []string{"networkPolicy.metricsScraper.podLabels.app=a b"}, want: "podLabels"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			_, err := runHelm(t, append([]string{"template", releaseName, chartDir(t)}, setArgs(test.set)...)...)
			if err == nil {
				t.Fatalf("helm template accepted %v", test.set)
			}
			if !strings.Contains(err.Error(), test.want) {
				t.Fatalf("helm template refused %v without naming %q: %v", test.set, test.want, err)
			}
		})
	}
}

func chartDir(t *testing.T) string {
	return filepath.Join(testenv.Root(t), "charts", "logbench")
}

// helmBinary returns bin/helm, which `make helm` builds; without it the test fails in
// CI and is skipped, saying why, elsewhere.
func helmBinary(t *testing.T) string {
	t.Helper()
	helm := filepath.Join(testenv.Root(t), "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		testenv.Missing(t, "%s not found: run make helm to test the chart", helm)
	}
	return helm
}

// runHelm runs bin/helm and returns its standard output; the error holds its standard
// error.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %w: %s%s", strings.Join(args, " "), err, &stderr, &stdout)
	}
	return stdout.String(), nil
}

func setArgs(values []string) []string {
	args := make([]string, 0, 2*len(values))
	for _, value := range values {
		args = append(args, "--set", value)
	}
	return args
}

// render returns the objects helm template renders, CRDs included, for the release
// logbench in logbench-system.
func render(t *testing.T, values []string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", releaseName, chartDir(t), "--namespace", releaseNamespace, "--include-crds"}
	manifest, err := runHelm(t, append(args, setArgs(values)...)...)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := testenv.DecodeManifest(strings.NewReader(manifest))
	if err != nil {
		t.Fatalf("helm template output: %v", err)
	}
	return objects
}

// findDeployment returns the only rendered Deployment, the operator's, failing the test
// unless there is exactly one.
func findDeployment(t *testing.T, objects []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, object := range objects {
		if object.GetKind() == "Deployment" {
			found = append(found, object)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the chart rendered %d Deployments, want 1", len(found))
	}
	return found[0]
}

// TestImage checks the operator's image, published at ghcr.io/logbench/logbench with the
// chart's appVersion as tag unless the values name another tag or a digest, and that
// the agent Jobs run it unless agent.image names another.
func TestImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	released := "ghcr.io/logbench/logbench:" + appVersion(t)
	tests := []struct {
		name                    string
		set                     []string
		wantOperator, wantAgent string
	}{
		{name: "chart's appVersion", wantOperator: released, wantAgent: released},
		{name: "operator image", set: []string{"image.repository=registry.example/logbench", "image.tag=2.0.0"},
			wantOperator: "registry.example/logbench:2.0.0", wantAgent: "registry.example/logbench:2.0.0"},
		{name: "digest wins over the tag", set: []string{"image.tag=2.0.0", "image.digest=" + digest},
			wantOperator: "ghcr.io/logbench/logbench@" + digest, wantAgent: "ghcr.io/logbench/logbench@" + digest},
		{name: "agent image", set: []string{"agent.image=registry.example/agent:dev"},
			wantOperator: released, wantAgent: "registry.example/agent:dev"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			container := toDeployment(t, findDeployment(t, render(t, test.set))).Spec.Template.Spec.Containers[0]
			if container.Image != test.wantOperator {
				t.Errorf("the operator runs %s, want %s", container.Image, test.wantOperator)
			}
			for _, variable := range container.Env {
				if variable.Name == "LOGBENCH_AGENT_IMAGE" {
					if variable.Value != test.wantAgent {
						t.Errorf("LOGBENCH_AGENT_IMAGE is %s, want %s", variable.Value, test.wantAgent)
					}
					return
				}
			}
			t.Error("the operator's container has no LOGBENCH_AGENT_IMAGE")
		})
	}
}

// TestImagePullSecrets checks that imagePullSecrets pull the operator's image and reach
// the operator, which gives them to every pod it creates.
func TestImagePullSecrets(t *testing.T) {
	deployment := toDeployment(t, findDeployment(t, render(t, []string{
		"imagePullSecrets[0].name=registry", "imagePullSecrets[1].name=mirror",
	})))
	pod := deployment.Spec.Template.Spec
	if got := fmt.Sprint(pod.ImagePullSecrets); got != "[{registry} {mirror}]" {
		t.Errorf("the operator's pod pulls with %s, want registry and mirror", got)
	}
	if !slices.Contains(pod.Containers[0].Args, "--image-pull-secrets=registry,mirror") {
		t.Errorf("the operator's arguments %q do not pass the pull secrets", pod.Containers[0].Args)
	}

	pod = toDeployment(t, findDeployment(t, render(t, nil))).Spec.Template.Spec
	if len(pod.ImagePullSecrets) > 0 || slices.ContainsFunc(pod.Containers[0].Args, func(arg string) bool {
		return strings.HasPrefix(arg, "--image-pull-secrets")
	}) {
		t.Errorf("without imagePullSecrets, the pod pulls with %v and the operator gets %q", pod.ImagePullSecrets,
			pod.Containers[0].Args)
	}
}

// appVersion returns the chart's appVersion, the default tag of its image.
func appVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(t), "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml holds no appVersion: %v", err)
	}
	return chart.AppVersion
}

func toDeployment(t *testing.T, object *unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var deployment appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &deployment); err != nil {
		t.Fatal(err)
	}
	if len(deployment.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("the Deployment runs %d containers, want 1", len(deployment.Spec.Template.Spec.Containers))
	}
	return &deployment
}
