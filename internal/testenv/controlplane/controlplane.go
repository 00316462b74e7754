// Package controlplane starts envtest control planes (a real etcd and kube-apiserver)
// with the LoggingBenchmark CRD and CloudNativePG's CRDs installed, for the project's
// API, controller and chart test suites.
package controlplane

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/logbench/logbench/internal/testenv"
)

// New returns an envtest environment, not yet started, that installs the CRDs of
// testenv.CRDPaths and fails to start when one of them is missing.
func New() (*envtest.Environment, error) {
	crdPaths, err := testenv.CRDPaths()
	if err != nil {
		return nil, err
	}
	return newEnvironment(crdPaths)
}

// NewWithoutCloudNativePG returns an envtest environment, not yet started, that installs
// the LoggingBenchmark CRD alone, as a cluster without CloudNativePG.
func NewWithoutCloudNativePG() (*envtest.Environment, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	return newEnvironment([]string{filepath.Join(root, "config", "crd", "bases")})
}

func newEnvironment(crdPaths []string) (*envtest.Environment, error) {
	assets, err := testenv.AssetsDir()
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     crdPaths,
		ErrorIfCRDPathMissing: true,
	}, nil
}

// Start starts environment for the test, which stops it at its end, and returns the
// configuration of a client of its API server.
func Start(t testing.TB, environment *envtest.Environment) *rest.Config {
	t.Helper()
	config, err := environment.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := environment.Stop(); err != nil {
			t.Error(err)
		}
	})
	return config
}
