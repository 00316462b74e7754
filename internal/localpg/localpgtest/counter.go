package localpgtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/testenv"
)

// counterBuilds caches the logbench_counter library built for each pg_config: the tests
// of a package build it once. RemoveCounterBuilds removes them.
var counterBuilds = struct {
	sync.Mutex
	libraries map[string]string
}{libraries: map[string]string{}}

// CounterLibrary builds the logbench_counter extension (logbench_counter/ in the
// repository) with the installation's pg_config, out of the source tree and with
// warnings as errors, and returns the library's path without its suffix, as
// shared_preload_libraries and CREATE FUNCTION take it. The build stays for the other
// tests of the package: call RemoveCounterBuilds from TestMain. When PGXS, make or
// GSSAPI's header are missing, the test fails if CI=true and is skipped, saying what to
// install, otherwise.
func CounterLibrary(t testing.TB, inst localpg.Installation) string {
	t.Helper()
	pgConfig := inst.Binary("pg_config")
	counterBuilds.Lock()
	defer counterBuilds.Unlock()
	if library, built := counterBuilds.libraries[pgConfig]; built {
		return library
	}
	RequirePGXS(t, inst)
	source := filepath.Join(testenv.Root(t), "logbench_counter")
	// Outside t.TempDir, which lasts only for one test; the server, as the OS user
	// postgres when the tests run as root, must read the library.
	build, err := os.MkdirTemp("", fmt.Sprintf("logbench-counter-pg%d-", inst.Version))
	if err == nil {
		err = os.Chmod(build, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-f", filepath.Join(source, "Makefile"), "VPATH="+source,
		"PG_CONFIG="+pgConfig, "PG_CFLAGS=-Werror")
	cmd.Dir = build
	output, err := cmd.CombinedOutput()
	if err != nil {
		os.RemoveAll(build)
		if bytes.Contains(output, []byte("gssapi/gssapi.h")) {
			testenv.Missing(t, "PostgreSQL's libpq-be.h includes GSSAPI's header, which is missing, so logbench_counter "+
				"cannot be built: install libkrb5-dev (Debian; .ci/run does)")
		}
		t.Fatalf("building logbench_counter for PostgreSQL %d: %v\n%s", inst.Version, err, output)
	}
	library := filepath.Join(build, "logbench_counter")
	counterBuilds.libraries[pgConfig] = library
	return library
}

// RemoveCounterBuilds removes the libraries CounterLibrary built.
func RemoveCounterBuilds() {
	counterBuilds.Lock()
	defer counterBuilds.Unlock()
	for pgConfig, library := range counterBuilds.libraries {
		os.RemoveAll(filepath.Dir(library))
		delete(counterBuilds.libraries, pgConfig)
	}
}

// RequirePGXS fails the test in CI, and skips it elsewhere, when logbench_counter cannot
// be built for inst: without make, or without inst's PGXS (its server development files).
func RequirePGXS(t testing.TB, inst localpg.Installation) {
	t.Helper()
	pgConfig := inst.Binary("pg_config")
	out, err := exec.Command(pgConfig, "--pgxs").Output()
	if err == nil {
		_, err = os.Stat(strings.TrimSpace(string(out)))
	}
	if err != nil {
		testenv.Missing(t, "PostgreSQL %d's PGXS is missing (%s --pgxs: %v), so logbench_counter cannot be built "+
			"for it: install postgresql-server-dev-%d (Debian; .ci/run does)", inst.Version, pgConfig, err, inst.Version)
	}
	if _, err := exec.LookPath("make"); err != nil {
		testenv.Missing(t, "make is missing, so logbench_counter cannot be built: install make")
	}
}
