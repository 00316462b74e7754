package testenv

import (
	"fmt"
	"os"
	"path/filepath"
)

// ModuleFile returns where the module cache holds the file name (slash-separated) of
// module@version, downloading the module through the module proxy when it is missing,
// so that tests can install third-party CRDs without copying them into the repository.
func ModuleFile(module, version, name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := moduleDir(root, module, version)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, filepath.FromSlash(name))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s@%s has no %s: %w", module, version, name, err)
	}
	return path, nil
}
