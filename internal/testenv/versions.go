package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// PinnedVersion returns the value of key in hack/versions.env, where the build pins every
// version it uses, so that a test runs what the clusters and the Makefile run.
func PinnedVersion(t testing.TB, key string) string {
	t.Helper()
	content, err := os.ReadFile(filepath.Join(Root(t), "hack", "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(content)) {
		if value, found := strings.CutPrefix(strings.TrimSpace(line), key+"="); found {
			return value
		}
	}
	t.Fatalf("hack/versions.env pins no %s", key)
	return ""
}
