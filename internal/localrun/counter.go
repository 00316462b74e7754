package localrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/localpg"
)

// ErrNoCounter: the benchmark sets logging whose records only a count at the source
// knows, and the local run has no counter.
var ErrNoCounter = errors.New("logging whose records no model predicts needs the " + v1alpha1.CounterExtension +
	" extension, which counts the records the server logs at the source: build it from this repository with " +
	"`make logbench-counter` and pass " +
	"--counter-library bin/logbench_counter/pg<major>/" + v1alpha1.CounterExtension + ".so, or build and install " +
	"it into the PostgreSQL installation with PGXS (`make -C logbench_counter install PG_CONFIG=<its pg_config>`), " +
	"where logbench finds it")

// CheckCounter refuses a benchmark that sets logging only a count at the source can
// account for when the local run has no counter library.
func CheckCounter(spec *v1alpha1.LoggingBenchmarkSpec, counterLibrary string) error {
	if fields := spec.FieldsNeedingCounter(); len(fields) > 0 && counterLibrary == "" {
		return fmt.Errorf("%s: %w", strings.Join(fields, ", "), ErrNoCounter)
	}
	return nil
}

// listSeparators are what shared_preload_libraries's list syntax reads specially.
const listSeparators = ",\" \t\n\r"

// FindCounter returns the counter library every local server preloads, as
// shared_preload_libraries and CREATE FUNCTION take it: the file path names (absolute),
// or, without one, the installation's own when logbench_counter is installed in its
// library directory (PGXS's make install puts it there), or "" when there is none.
func FindCounter(inst localpg.Installation, path string) (string, error) {
	if path == "" {
		if inst.HasLibrary(v1alpha1.CounterExtension) {
			return "$libdir/" + v1alpha1.CounterExtension, nil
		}
		return "", nil
	}
	absolute, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(absolute, listSeparators) {
		return "", fmt.Errorf("the %s library %s: its path holds a comma, a quote or white space, which "+
			"shared_preload_libraries, a list, would split or need quoted: move it", v1alpha1.CounterExtension, absolute)
	}
	// PostgreSQL adds the suffix to a path without one, as CREATE FUNCTION does.
	file := absolute
	if !strings.HasSuffix(file, ".so") {
		file += ".so"
	}
	info, err := os.Stat(file)
	if err == nil && !info.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		return "", fmt.Errorf("the %s library %s: %w", v1alpha1.CounterExtension, file, err)
	}
	return absolute, nil
}
