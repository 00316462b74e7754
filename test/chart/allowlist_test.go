package chart_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/internal/testenv"
)

// allowlistFlags are the operator's flags that carry the policy's allowlists, by the
// name of the policy's variable.
var allowlistFlags = map[string]string{
	"allowedImagePrefixes":  "--allowed-image-prefixes",
	"allowedTolerations":    "--allowed-tolerations",
	"allowedNodeSelectors":  "--allowed-node-selectors",
	"allowedStorageClasses": "--allowed-storage-classes",
}

// TestAllowlistsRendered checks that the admission policy carries its allowlists in
// itself, rendered from the values, rather than in a parameter the operator could
// change, and that the operator receives the same lists, which it checks again.
func TestAllowlistsRendered(t *testing.T) {
	tests := []struct {
		name string
		set  []string
		// want are the lists by the policy's variable, as JSON.
		want map[string]string
	}{
		{name: "defaults", want: map[string]string{
			"allowedImagePrefixes": `["ghcr.io/cloudnative-pg/","cr.fluentbit.io/fluent/",` +
				`"otel/opentelemetry-collector-contrib:","ghcr.io/logbench/"]`,
			"allowedTolerations":    `[]`,
			"allowedNodeSelectors":  `[]`,
			"allowedStorageClasses": `[]`,
		}},
		{name: "production pool", set: append([]string{"allowedImages={registry.example/pg@}"}, productionPool...),
			want: map[string]string{
				"allowedImagePrefixes": `["registry.example/pg@"]`,
				"allowedTolerations": `[{"effect":"NoSchedule","key":"dedicated","operator":"Equal",` +
					`"value":"databases"}]`,
				"allowedNodeSelectors":  `["node-pool=databases"]`,
				"allowedStorageClasses": `["fast-ssd"]`,
			}},
		{name: "no image allowed", set: []string{"allowedImages=null"}, want: map[string]string{
			"allowedImagePrefixes": `[]`,
		}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			objects := render(t, test.set)
			policy := findObject(t, objects, "ValidatingAdmissionPolicy")
			if _, found, _ := unstructured.NestedFieldNoCopy(policy.Object, "spec", "paramKind"); found {
				t.Error("the policy takes a parameter: its allowlists would be where the operator may write")
			}
			binding := findObject(t, objects, "ValidatingAdmissionPolicyBinding")
			if _, found, _ := unstructured.NestedFieldNoCopy(binding.Object, "spec", "paramRef"); found {
				t.Error("the binding references a parameter")
			}
			variables := policyVariables(t, policy)
			args := toDeployment(t, findDeployment(t, objects)).Spec.Template.Spec.Containers[0].Args
			for variable, want := range test.want {
				if got := variables[variable]; !sameJSON(t, got, want) {
					t.Errorf("the policy's %s is %s, want %s", variable, got, want)
				}
				if got := flagValue(args, allowlistFlags[variable]); got != operatorFlag(t, variable, want) {
					t.Errorf("the operator's %s is %q, want the policy's %s", allowlistFlags[variable], got, want)
				}
			}
		})
	}
}

// TestMalformedImagePrefixFailsTheTemplate: the template refuses an image prefix that
// does not end in /, : or @ also where the schema is skipped, since the policy would
// ignore it and the operator refuse to start.
func TestMalformedImagePrefixFailsTheTemplate(t *testing.T) {
	_, err := runHelm(t, "template", releaseName, chartDir(t), "--skip-schema-validation",
		"--set", "allowedImages={ghcr.io/cloudnative-pg}")
	if err == nil || !strings.Contains(err.Error(), `allowedImages: "ghcr.io/cloudnative-pg" must end in /, : or @`) {
		t.Fatalf("helm template without the schema: %v", err)
	}
}

// TestKustomizeAllowlistsAgree: the kustomize install's policy and operator allow the
// same, and as much as the chart's defaults.
func TestKustomizeAllowlistsAgree(t *testing.T) {
	content, err := os.ReadFile(filepath.Join(testenv.Root(t), "config", "admission", "requester_rights_policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var policy unstructured.Unstructured
	if err := yaml.Unmarshal(content, &policy.Object); err != nil {
		t.Fatal(err)
	}
	variables := policyVariables(t, &policy)
	manifest, err := os.Open(filepath.Join(testenv.Root(t), "config", "manager", "manager.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer manifest.Close()
	objects, err := testenv.DecodeManifest(manifest)
	if err != nil {
		t.Fatal(err)
	}
	args := toDeployment(t, findObject(t, objects, "Deployment")).Spec.Template.Spec.Containers[0].Args
	for variable, flag := range allowlistFlags {
		if got, want := flagValue(args, flag), operatorFlag(t, variable, variables[variable]); got != want {
			t.Errorf("config/manager passes %s=%s, the policy's %s is %s", flag, got, variable, variables[variable])
		}
	}
	chartDefaults := policyVariables(t, findObject(t, render(t, nil), "ValidatingAdmissionPolicy"))
	if !sameJSON(t, variables["allowedImagePrefixes"], chartDefaults["allowedImagePrefixes"]) {
		t.Errorf("config/admission allows the images %s, the chart's defaults %s", variables["allowedImagePrefixes"],
			chartDefaults["allowedImagePrefixes"])
	}
}

// policyVariables returns the expressions of the policy's variables by name.
func policyVariables(t *testing.T, policy *unstructured.Unstructured) map[string]string {
	t.Helper()
	list, _, err := unstructured.NestedSlice(policy.Object, "spec", "variables")
	if err != nil {
		t.Fatal(err)
	}
	variables := map[string]string{}
	for _, item := range list {
		variable, _ := item.(map[string]any)
		name, _ := variable["name"].(string)
		variables[name], _ = variable["expression"].(string)
	}
	return variables
}

// operatorFlag is the value of the operator's flag that carries the list the policy's
// variable holds as JSON: the tolerations as JSON, the others joined by commas.
func operatorFlag(t *testing.T, variable, listJSON string) string {
	t.Helper()
	if variable == "allowedTolerations" {
		var tolerations []map[string]string
		if err := json.Unmarshal([]byte(listJSON), &tolerations); err != nil {
			t.Fatalf("%s: %v", variable, err)
		}
		compact, err := json.Marshal(tolerations)
		if err != nil {
			t.Fatal(err)
		}
		return string(compact)
	}
	var list []string
	if err := json.Unmarshal([]byte(listJSON), &list); err != nil {
		t.Fatalf("%s %s is no JSON list of strings: %v", variable, listJSON, err)
	}
	return strings.Join(list, ",")
}

// flagValue returns the value of --flag=value among args, "<missing>" without it.
func flagValue(args []string, flag string) string {
	index := slices.IndexFunc(args, func(arg string) bool { return strings.HasPrefix(arg, flag+"=") })
	if index < 0 {
		return "<missing>"
	}
	return strings.TrimPrefix(args[index], flag+"=")
}

// sameJSON tells whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var valueA, valueB any
	if json.Unmarshal([]byte(a), &valueA) != nil || json.Unmarshal([]byte(b), &valueB) != nil {
		return false
	}
	encodedA, _ := json.Marshal(valueA)
	encodedB, _ := json.Marshal(valueB)
	return string(encodedA) == string(encodedB)
}

// findObject returns the only rendered object of the kind.
func findObject(t *testing.T, objects []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, object := range objects {
		if object.GetKind() == kind {
			found = append(found, object)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the chart rendered %d %s, want 1", len(found), kind)
	}
	return found[0]
}
