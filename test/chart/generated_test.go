package chart_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbench/logbench/internal/testenv"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const staleCopies = "the chart's copies of the generated manifests are stale: run make helm-sync"

// TestCRDsAreTheGeneratedOnes checks that the chart's crds/ holds exactly the CRDs
// controller-gen generated into config/crd/bases.
func TestCRDsAreTheGeneratedOnes(t *testing.T) {
	generated := readYAMLFiles(t, filepath.Join(testenv.Root(t), "config", "crd", "bases"))
	copies := readYAMLFiles(t, filepath.Join(chartDir(t), "crds"))
	for name, content := range generated {
		if !bytes.Equal(copies[name], content) {
			t.Errorf("crds/%s differs from config/crd/bases/%s: %s", name, name, staleCopies)
		}
	}
	for name := range copies {
		if _, ok := generated[name]; !ok {
			t.Errorf("crds/%s is not in config/crd/bases: %s", name, staleCopies)
		}
	}
}

// TestClusterRolesGrantTheirSourceRules checks that each rendered ClusterRole grants
// what its file in config/rbac does, no more and no less: the operator's what the
// +kubebuilder:rbac markers declare, the users' what the kustomize install grants.
func TestClusterRolesGrantTheirSourceRules(t *testing.T) {
	sources := map[string]string{
		"logbench-manager":                 "role.yaml",
		"logbench-loggingbenchmark-admin":  "loggingbenchmark_admin_role.yaml",
		"logbench-loggingbenchmark-editor": "loggingbenchmark_editor_role.yaml",
		"logbench-loggingbenchmark-viewer": "loggingbenchmark_viewer_role.yaml",
		"logbench-agent":                   "agent_role.yaml",
		"logbench-runner":                  "runner_role.yaml",
		"logbench-metrics-auth":            "metrics_auth_role.yaml",
		"logbench-metrics-reader":          "metrics_reader_role.yaml",
	}
	rendered := renderedClusterRoles(t)
	for name := range rendered {
		if _, ok := sources[name]; !ok {
			t.Errorf("the chart renders ClusterRole %s, which has no source in config/rbac", name)
		}
	}
	for name, source := range sources {
		content, err := os.ReadFile(filepath.Join(testenv.Root(t), "config", "rbac", source))
		if err != nil {
			t.Fatal(err)
		}
		var want rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(content, &want); err != nil {
			t.Fatalf("config/rbac/%s: %v", source, err)
		}
		role, ok := rendered[name]
		if !ok {
			t.Errorf("the chart renders no ClusterRole %s", name)
			continue
		}
		if !equality.Semantic.DeepEqual(role.Rules, want.Rules) {
			t.Errorf("the rules of ClusterRole %s differ from config/rbac/%s: %s\nrendered: %+v\nsource: %+v",
				name, source, staleCopies, role.Rules, want.Rules)
		}
	}
}

// readYAMLFiles returns the YAML files of a folder by name.
func readYAMLFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte, len(paths))
	for _, path := range paths {
		content, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(path)] = content
	}
	if len(files) == 0 {
		t.Fatalf("%s holds no YAML file", dir)
	}
	return files
}

// renderedClusterRoles returns the ClusterRoles the chart renders with its defaults, by
// name.
func renderedClusterRoles(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	rendered := map[string]rbacv1.ClusterRole{}
	for _, object := range render(t, nil) {
		if object.GetKind() != "ClusterRole" {
			continue
		}
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &role); err != nil {
			t.Fatal(err)
		}
		rendered[role.Name] = role
	}
	return rendered
}

// TestAdmissionPolicyIsConfigs checks that the chart's admission policy is the one
// config/admission holds, so that both installs refuse the same benchmarks.
func TestAdmissionPolicyIsConfigs(t *testing.T) {
	const name = "requester_rights_policy.yaml"
	source, err := os.ReadFile(filepath.Join(testenv.Root(t), "config", "admission", name))
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chartDir(t), "files", name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(source, copied) {
		t.Errorf("files/%s differs from config/admission/%s: %s", name, name, staleCopies)
	}
}
