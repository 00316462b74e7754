// Package golden compares test output with files under testdata, for the renderers
// whose exact output is part of their contract.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// Assert fails t when got differs from the file at path; with -update it rewrites the
// file first.
func Assert(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (rerun with -update if the change is intended):\n"+
			"--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
