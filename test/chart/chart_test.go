// Package chart_test checks the Helm chart charts/logbench: it lints and renders with
// every optional part, its objects pass the API server's validation and the restricted
// Pod Security Standard, its copies of the CRDs and ClusterRole are those config/ holds,
// and its Grafana dashboard is well formed.
package chart_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/internal/testenv"
)

const (
	releaseName      = "logbench"
	releaseNamespace = "logbench-system"
)

// valueSets are the configurations the tests render: the defaults, the monitoring
// integrations on, and the scheduling and naming knobs turned.
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
		{name: "unknown nested key", set: []string{"image.digest=sha256:0"}, want: "digest"},
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

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func chartDir(t *testing.T) string {
	return filepath.Join(repoRoot(t), "charts", "logbench")
}

// helmBinary returns bin/helm, which `make helm` builds, and skips the test without it.
func helmBinary(t *testing.T) string {
	t.Helper()
	helm := filepath.Join(repoRoot(t), "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Skipf("%s not found: run make helm to test the chart", helm)
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
	objects, err := decodeObjects(strings.NewReader(manifest))
	if err != nil {
		t.Fatalf("helm template output: %v", err)
	}
	return objects
}

// decodeObjects decodes a multi-document YAML manifest, skipping empty documents.
func decodeObjects(manifest io.Reader) ([]*unstructured.Unstructured, error) {
	var objects []*unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(manifest))
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects, nil
		}
		if err != nil {
			return nil, err
		}
		object := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(document, &object.Object); err != nil {
			return nil, err
		}
		if len(object.Object) > 0 {
			objects = append(objects, object)
		}
	}
}

// findObject returns the only rendered object of a kind, failing the test unless there
// is exactly one.
func findObject(t *testing.T, objects []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, object := range objects {
		if object.GetKind() == kind {
			found = append(found, object)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the chart rendered %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// TestAgentImage checks that the agent Jobs run the operator's own image unless
// agent.image names another.
func TestAgentImage(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		want string
	}{
		{name: "chart's appVersion", want: "logbench:0.1.0"},
		{name: "operator image", set: []string{"image.repository=registry.example/logbench", "image.tag=2.0.0"},
			want: "registry.example/logbench:2.0.0"},
		{name: "agent image", set: []string{"agent.image=registry.example/agent:dev"},
			want: "registry.example/agent:dev"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			deployment := toDeployment(t, findObject(t, render(t, test.set), "Deployment"))
			for _, variable := range deployment.Spec.Template.Spec.Containers[0].Env {
				if variable.Name == "LOGBENCH_AGENT_IMAGE" {
					if variable.Value != test.want {
						t.Errorf("LOGBENCH_AGENT_IMAGE is %s, want %s", variable.Value, test.want)
					}
					return
				}
			}
			t.Error("the operator's container has no LOGBENCH_AGENT_IMAGE")
		})
	}
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
