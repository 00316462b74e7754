package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/internal/report"
)

// savedQuickRun is a local run's saved benchmark, whose rows hold their repeats.
var savedQuickRun = filepath.Join("..", "..", "docs", "examples", "quick-result.yaml")

// TestCompare compares a saved local run with itself, from two files and from one list
// that holds it under two names, where every change is noise; and refuses what it
// cannot compare, saying what to give instead.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	quick, err := report.ReadFile(savedQuickRun, "")
	if err != nil {
		t.Fatal(err)
	}
	list := filepath.Join(dir, "list.yaml")
	writeYAML(t, list, map[string]any{"apiVersion": "v1", "kind": "List",
		"items": []any{renamed(quick, "before"), renamed(quick, "after")}})
	// As kubectl get -A saves one name from two namespaces.
	namespaces := filepath.Join(dir, "namespaces.yaml")
	writeYAML(t, namespaces, map[string]any{"apiVersion": "v1", "kind": "List",
		"items": []any{renamed(quick, "staging/nightly"), renamed(quick, "production/nightly")}})
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("apiVersion: bench.logbench.io/v1alpha1\nkind: LoggingBenchmark\n"+
		"metadata: {name: empty}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noCluster := []string{"--kubeconfig", filepath.Join(dir, "absent")}
	for name, tc := range map[string]struct {
		args    []string
		message string // of the error; empty for success
	}{
		"two files":                  {args: []string{"-f", savedQuickRun, "-f", savedQuickRun}},
		"two files and their names":  {args: []string{"-f", savedQuickRun, "-f", savedQuickRun, "quick", "quick"}},
		"one list and both names":    {args: []string{"-f", list, "before", "after"}},
		"two files and another name": {args: []string{"-f", savedQuickRun, "-f", savedQuickRun, "quick", "x"}, message: "not x"},
		"one list and one name":      {args: []string{"-f", list, "before"}, message: "give the names of BEFORE and AFTER in " + list},
		"one list without names":     {args: []string{"-f", list}, message: "give the names of BEFORE and AFTER"},
		"two files and one name":     {args: []string{"-f", list, "-f", list, "before"}, message: "both BEFORE and AFTER"},
		"three files": {args: []string{"-f", list, "-f", list, "-f", list},
			message: "-f given 3 times"},
		"a name the list lacks":      {args: []string{"-f", list, "before", "x"}, message: "holds no LoggingBenchmark x"},
		"one name in two namespaces": {args: []string{"-f", namespaces, "staging/nightly", "production/nightly"}},
		"a name in two namespaces, without either": {args: []string{"-f", namespaces, "nightly", "production/nightly"},
			message: "(staging/nightly, production/nightly): give the NAME of one, or NAMESPACE/NAME"},
		"without results": {args: []string{"-f", savedQuickRun, "-f", empty},
			message: "LoggingBenchmark empty of " + empty + " holds no results"},
		"html":    {args: []string{"-f", savedQuickRun, "-f", savedQuickRun, "-o", "html"}, message: "html"},
		"nothing": {args: nil, message: "give BEFORE and AFTER"},
		"names without a cluster": {args: append([]string{"before", "after"}, noCluster...),
			message: "give -f FILE"},
		"files without -f": {args: append([]string{savedQuickRun, list}, noCluster...),
			message: fmt.Sprintf("logbench compare -f %s -f %s compares them", savedQuickRun, list)},
	} {
		t.Run(name, func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(append([]string{"compare"}, tc.args...))
			err := root.Execute()
			if tc.message != "" {
				if err == nil || !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("error = %v, want it to mention %q", err, tc.message)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "Δ TPS") || !strings.Contains(out.String(), "~ (p=1.000") {
				t.Errorf("comparing a benchmark with itself:\n%s", out.String())
			}
		})
	}
}

// TestReadBenchmark reads benchmarks from a cluster as report and compare do: the rows
// of a status leave their repeats out, which the runs' LoggingBenchmarkRuns hold.
func TestReadBenchmark(t *testing.T) {
	quick, err := report.ReadFile(savedQuickRun, "")
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	const namespace = "benchmarks"
	var objects []client.Object
	// "after" twice: the other one, in namespace staging, has no runs.
	for _, name := range []string{"before", "after", "staging/after"} {
		benchmark := quick.DeepCopy()
		benchmark.Namespace, benchmark.Name = namespace, name
		if own, short, found := strings.Cut(name, "/"); found {
			benchmark.Namespace, benchmark.Name = own, short
			benchmark.Status.Results = benchmark.Status.Results[:1]
			benchmark.Status.Results[0].Repeats = nil
		}
		name := benchmark.Name
		for i := range benchmark.Status.Results {
			row := &benchmark.Status.Results[i]
			for _, repeat := range row.Repeats {
				objects = append(objects, &v1alpha1.LoggingBenchmarkRun{
					ObjectMeta: metav1.ObjectMeta{Namespace: benchmark.Namespace,
						Name:   fmt.Sprintf("%s-%s-%d-%d", name, row.Destination, row.Clients, repeat.Repeat),
						Labels: map[string]string{builders.LabelBenchmark: name}},
					Spec: v1alpha1.LoggingBenchmarkRunSpec{Benchmark: name, Destination: row.Destination,
						Clients: row.Clients, Repeat: repeat.Repeat},
					Status: repeat,
				})
			}
			row.Repeats = nil
		}
		objects = append(objects, benchmark)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	ctx := context.Background()
	read, err := readBenchmark(ctx, c, namespace, "after")
	if err != nil {
		t.Fatal(err)
	}
	if len(read.Status.Results) != len(quick.Status.Results) {
		t.Fatalf("read %d rows, want %d", len(read.Status.Results), len(quick.Status.Results))
	}
	for i, row := range read.Status.Results {
		if want := quick.Status.Results[i].Repeats; len(row.Repeats) != len(want) || row.Repeats[0].TPS != want[0].TPS {
			t.Errorf("%s with %d clients: repeats %v, want %v", row.Destination, row.Clients, row.Repeats, want)
		}
	}
	for _, reference := range []string{"staging/after", namespace + "/after"} {
		own, _, _ := strings.Cut(reference, "/")
		read, err := readBenchmark(ctx, c, "default", reference)
		if err != nil || read.Namespace != own {
			t.Fatalf("reading %s from namespace default: %v, %v", reference, read, err)
		}
		if own == "staging" && (len(read.Status.Results) != 1 || len(read.Status.Results[0].Repeats) != 0) {
			t.Errorf("%s holds the runs of another namespace's benchmark of its name: %v", reference, read.Status.Results)
		}
	}
	for reference, message := range map[string]string{
		"absent":         "LoggingBenchmark absent not found in namespace benchmarks",
		"staging/before": "LoggingBenchmark before not found in namespace staging",
		"after/":         `"after/" names no LoggingBenchmark: give NAME or NAMESPACE/NAME`,
	} {
		if _, err := readBenchmark(ctx, c, namespace, reference); err == nil || !strings.Contains(err.Error(), message) {
			t.Errorf("reading %s: %v, want an error that contains %q", reference, err, message)
		}
	}
}

// renamed is benchmark under another name, as a list item.
// renamed copies benchmark under name: NAME, or NAMESPACE/NAME.
func renamed(benchmark *v1alpha1.LoggingBenchmark, name string) *v1alpha1.LoggingBenchmark {
	copied := benchmark.DeepCopy()
	copied.Name = name
	if namespace, short, found := strings.Cut(name, "/"); found {
		copied.Namespace, copied.Name = namespace, short
	}
	return copied
}

func writeYAML(t *testing.T, path string, object any) {
	t.Helper()
	data, err := yaml.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
