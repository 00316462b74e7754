// Package testenv finds what the project's tests need: the repository, the envtest
// binaries and CRDs (the control planes themselves are package controlplane's), the
// Fluent Bit and Loki binaries, and free ports and processes to run them. It links
// nothing of client-go or controller-runtime: the fuzzing pass instruments every package
// a test binary holds, and the packages that parse foreign text use this one.
package testenv

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const (
	// CloudNativePGModule is the Go module whose release manifest holds the CRDs of the
	// CloudNativePG version logbench drives.
	CloudNativePGModule = "github.com/cloudnative-pg/cloudnative-pg"
	// CloudNativePGVersion is the CloudNativePG release whose CRDs are installed.
	CloudNativePGVersion = "v1.30.0"

	assetsEnv = "KUBEBUILDER_ASSETS"
	// cloudNativePGCRDFile holds CloudNativePG's CRDs in the folder cloudNativePGCRDDir
	// extracts them to.
	cloudNativePGCRDFile = "crds.yaml"
)

// AssetsDir returns the folder holding the kube-apiserver and etcd binaries envtest
// runs: $KUBEBUILDER_ASSETS when set, else <repo>/bin/k8s when it holds both.
func AssetsDir() (string, error) {
	if dir := os.Getenv(assetsEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "bin", "k8s")
	for _, binary := range []string{"kube-apiserver", "etcd"} {
		if info, err := os.Stat(filepath.Join(dir, binary)); err != nil || info.IsDir() {
			return "", fmt.Errorf("envtest binaries not found: %s has no %s and %s is unset; run make envtest",
				dir, binary, assetsEnv)
		}
	}
	return dir, nil
}

// CRDPaths returns the folders holding the CRDs the test control plane needs: the
// project's own (config/crd/bases) and CloudNativePG's.
func CRDPaths() ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	cnpgDir, err := cloudNativePGCRDDir(root)
	if err != nil {
		return nil, err
	}
	return []string{filepath.Join(root, "config", "crd", "bases"), cnpgDir}, nil
}

// CloudNativePGCRDs returns the file holding CloudNativePG's CRDs, extracted from the
// release manifest of CloudNativePGVersion.
func CloudNativePGCRDs() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := cloudNativePGCRDDir(root)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, cloudNativePGCRDFile), nil
}

// RepoRoot returns the folder holding go.mod, found by walking up from the working
// directory (a test runs in its package's folder).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// Root is RepoRoot for a test, which fails without it.
func Root(t testing.TB) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// cloudNativePGCRDDir extracts the CustomResourceDefinitions of CloudNativePG's release
// manifest, which also holds its Deployment, RBAC and webhooks, into bin/ once, so that
// envtest installs the CRDs alone. The manifest is read from the Go module cache and is
// never copied into the repository.
func cloudNativePGCRDDir(root string) (string, error) {
	dir := filepath.Join(root, "bin", "cnpg-crds-"+CloudNativePGVersion)
	target := filepath.Join(dir, cloudNativePGCRDFile)
	if _, err := os.Stat(target); err == nil {
		return dir, nil
	}
	moduleDir, err := moduleDir(root, CloudNativePGModule, CloudNativePGVersion)
	if err != nil {
		return "", err
	}
	manifest := filepath.Join(moduleDir, "releases", "cnpg-"+CloudNativePGVersion[1:]+".yaml")
	crds, err := extractCRDs(manifest)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, writeAtomically(target, crds)
}

// moduleDir returns where the module cache holds module@version, downloading it through
// the module proxy when it is missing.
func moduleDir(root, module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w: %s", module, version, err, stderr.String())
	}
	var download struct{ Dir string }
	if err := json.Unmarshal(out, &download); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", module, version, err)
	}
	if download.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s printed no Dir", module, version)
	}
	return download.Dir, nil
}

// extractCRDs returns the CustomResourceDefinition documents of a multi-document YAML
// manifest, joined into one multi-document YAML.
func extractCRDs(manifest string) ([]byte, error) {
	file, err := os.Open(manifest)
	if err != nil {
		return nil, err
	}
	defer func() { _ = file.Close() }() // read only: closing loses nothing

	var crds bytes.Buffer
	reader := utilyaml.NewYAMLReader(bufio.NewReader(file))
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", manifest, err)
		}
		var header struct{ Kind string }
		if err := yaml.Unmarshal(document, &header); err != nil {
			return nil, fmt.Errorf("%s: %w", manifest, err)
		}
		if header.Kind == "CustomResourceDefinition" {
			crds.WriteString("---\n")
			crds.Write(document)
		}
	}
	if crds.Len() == 0 {
		return nil, fmt.Errorf("%s holds no CustomResourceDefinition", manifest)
	}
	return crds.Bytes(), nil
}

// writeAtomically writes data to path through a rename, so that test binaries of several
// packages running at once never read a half-written file.
func writeAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // fails, as it should, once the rename moved it
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close() // the write's error is the one to report
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
