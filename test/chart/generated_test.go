package chart_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const staleCopies = "the chart's copies of the generated manifests are stale: run make helm-sync"

// TestCRDsAreTheGeneratedOnes checks that the chart's crds/ holds exactly the CRDs
// controller-gen generated into config/crd/bases.
func TestCRDsAreTheGeneratedOnes(t *testing.T) {
	generated := readYAMLFiles(t, filepath.Join(repoRoot(t), "config", "crd", "bases"))
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

// TestClusterRoleGrantsTheGeneratedRules checks that the rendered ClusterRole grants
// what the +kubebuilder:rbac markers declare, no more and no less.
func TestClusterRoleGrantsTheGeneratedRules(t *testing.T) {
	content, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var generated rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(content, &generated); err != nil {
		t.Fatalf("config/rbac/role.yaml: %v", err)
	}
	var rendered rbacv1.ClusterRole
	object := findObject(t, render(t, nil), "ClusterRole")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &rendered); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(rendered.Rules, generated.Rules) {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/role.yaml: %s\nrendered: %+v\ngenerated: %+v",
			staleCopies, rendered.Rules, generated.Rules)
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
