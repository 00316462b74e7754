package shipping

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestDefaultImagesAreTheTestedReleases: a default shipper image whose release differs
// from the build the tests run ships with software no test ever ran. The tests run
// Fluent Bit FLUENT_BIT_VERSION and the collector built by the builder at
// OTELCOL_BUILDER_VERSION, both from the Makefile.
func TestDefaultImagesAreTheTestedReleases(t *testing.T) {
	variables := makefileVariables(t, "../../Makefile")
	for kind, variable := range map[v1alpha1.ShipperKind]string{
		v1alpha1.ShipperFluentBit:              "FLUENT_BIT_VERSION",
		v1alpha1.ShipperOpenTelemetryCollector: "OTELCOL_BUILDER_VERSION",
	} {
		tested, ok := variables[variable]
		if !ok {
			t.Fatalf("the Makefile sets no %s", variable)
		}
		image := shipperFor(kind).DefaultImage()
		tag := image[strings.LastIndex(image, ":")+1:]
		if want := strings.TrimPrefix(tested, "v"); tag != want {
			t.Errorf("the default %s image is %s, want tag %s: the Makefile's %s, the release the tests run",
				kind, image, want, variable)
		}
	}
}

// makefileVariables returns the variables a Makefile sets with "NAME ?= value".
func makefileVariables(t *testing.T, path string) map[string]string {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }() // read only: closing loses nothing
	variables := map[string]string{}
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		if name, value, ok := strings.Cut(scanner.Text(), "?="); ok && !strings.ContainsAny(name, "\t#") {
			variables[strings.TrimSpace(name)] = strings.TrimSpace(value)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return variables
}
