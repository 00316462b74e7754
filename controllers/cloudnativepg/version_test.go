package cloudnativepg

import (
	"testing"

	"github.com/logbench/logbench/internal/testenv"
)

// TestVersionIsTheTestedOne: the mirrors follow the release whose CRDs envtest installs.
func TestVersionIsTheTestedOne(t *testing.T) {
	if testenv.CloudNativePGVersion != Version {
		t.Errorf("testenv installs CloudNativePG %s, the mirrors follow %s", testenv.CloudNativePGVersion, Version)
	}
}
