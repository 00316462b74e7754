package shipping

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/testenv"
)

// TestDefaultImagesAreTheTestedReleases: a default shipper image whose release differs
// from the build the tests run ships with software no test ever ran. The tests run
// Fluent Bit FLUENT_BIT_VERSION and the collector built by the builder at
// OTELCOL_BUILDER_VERSION, both pinned in hack/versions.env.
func TestDefaultImagesAreTheTestedReleases(t *testing.T) {
	for kind, variable := range map[v1alpha1.ShipperKind]string{
		v1alpha1.ShipperFluentBit:              "FLUENT_BIT_VERSION",
		v1alpha1.ShipperOpenTelemetryCollector: "OTELCOL_BUILDER_VERSION",
	} {
		tested := testenv.PinnedVersion(t, variable)
		image := shipperFor(kind).DefaultImage()
		tag := image[strings.LastIndex(image, ":")+1:]
		if want := strings.TrimPrefix(tested, "v"); tag != want {
			t.Errorf("the default %s image is %s, want tag %s: hack/versions.env's %s, the release the tests run",
				kind, image, want, variable)
		}
	}
}
