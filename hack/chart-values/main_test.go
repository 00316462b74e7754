package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/logbench/logbench/internal/testenv"
)

const (
	valuesFile = "charts/logbench/values.yaml"
	reference  = "docs/reference/chart-values.md"
)

// TestEveryValueIsDocumented fails when a value of the chart has no comment above it in
// values.yaml: its row in the reference would say nothing.
func TestEveryValueIsDocumented(t *testing.T) {
	for _, row := range chartRows(t) {
		if row.description == "" {
			t.Errorf("%s: %s has no comment: say above it what it does", valuesFile, row.path)
		}
	}
}

// TestReferenceIsCurrent fails when the committed reference is not what values.yaml
// gives now, before CI's make verify-generated.
func TestReferenceIsCurrent(t *testing.T) {
	committed, err := os.ReadFile(filepath.Join(testenv.Root(t), reference))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(render(valuesFile, chartRows(t)), committed) {
		t.Errorf("%s differs from %s: run make docs and commit it", reference, valuesFile)
	}
}

func TestParseValues(t *testing.T) {
	source := []byte(`# The file's own comment.

# plain is a scalar.
plain: ""
section:
  # child is documented.
  child: 1
  undocumented: [a, b]
# group is a map whose keys say nothing: one row.
group:
  inner: {x: "1"}
# example has a description,
# on two lines.
#
# - and: an example
example: []
`)
	want := []row{
		{path: "plain", defaultValue: `""`, description: "plain is a scalar."},
		{path: "section.child", defaultValue: "1", description: "child is documented."},
		{path: "section.undocumented", defaultValue: "[a, b]"},
		{path: "group", defaultValue: `{inner: {x: "1"}}`, description: "group is a map whose keys say nothing: one row."},
		{path: "example", defaultValue: "[]", description: "example has a description, on two lines."},
	}
	got, err := parseValues(source)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("parseValues gave %d rows, want %d:\n%+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestEscapeCell(t *testing.T) {
	for text, want := range map[string]string{
		"a | b":          `a \| b`,
		"<release>-name": "&lt;release>-name",
		"plain":          "plain",
	} {
		if got := escapeCell(text); got != want {
			t.Errorf("escapeCell(%q) = %q, want %q", text, got, want)
		}
	}
}

// chartRows returns the rows of the chart's values.yaml.
func chartRows(t *testing.T) []row {
	t.Helper()
	source, err := os.ReadFile(filepath.Join(testenv.Root(t), valuesFile))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := parseValues(source)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
