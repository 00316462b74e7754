package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareSavedBenchmarks compares a saved local run with itself: every change is
// noise, and a file without results is refused with what to do.
func TestCompareSavedBenchmarks(t *testing.T) {
	saved := filepath.Join("..", "..", "docs", "examples", "quick-result.yaml")
	var out bytes.Buffer
	if err := runCompare(saved, saved, "table", &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Δ TPS") || !strings.Contains(out.String(), "~ (p=1.000") {
		t.Errorf("comparing a benchmark with itself:\n%s", out.String())
	}
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("apiVersion: bench.logbench.io/v1alpha1\nkind: LoggingBenchmark\n"+
		"metadata: {name: empty}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := runCompare(saved, empty, "table", &out); err == nil || !strings.Contains(err.Error(), "--save") {
		t.Errorf("comparing with a benchmark without results: %v", err)
	}
	if err := runCompare(saved, saved, "html", &out); err == nil {
		t.Error("compare accepted the html format")
	}
}
