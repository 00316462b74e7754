package cloudnativepg

import (
	"testing"

	"github.com/logbench/logbench/internal/testenv"
)

// TestVersionIsTheTestedOne: the mirrors follow the release whose CRDs envtest installs
// and which the clusters run (hack/versions.env).
func TestVersionIsTheTestedOne(t *testing.T) {
	if testenv.CloudNativePGVersion != Version {
		t.Errorf("testenv installs CloudNativePG %s, the mirrors follow %s", testenv.CloudNativePGVersion, Version)
	}
	if pinned := "v" + testenv.PinnedVersion(t, "CNPG_VERSION"); pinned != Version {
		t.Errorf("the clusters run CloudNativePG %s, the mirrors follow %s", pinned, Version)
	}
}
