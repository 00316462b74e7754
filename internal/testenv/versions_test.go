package testenv

import (
	"regexp"
	"testing"
)

func TestPinnedVersion(t *testing.T) {
	for _, key := range []string{"KUBE_VERSION", "PROMETHEUS_OPERATOR_VERSION", "FLUENT_BIT_VERSION"} {
		if version := PinnedVersion(t, key); !regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(version) {
			t.Errorf("%s = %q, not a version", key, version)
		}
	}
}
