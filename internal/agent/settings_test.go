package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbench/logbench/internal/localpg/localpgtest"
)

// TestApplySettingsWaitsForTheLoggingCollector moves a real server's records to another
// format and folder, as a run's settings do: the logging collector has not switched
// before, it has once applySettings returns, and a record logged at once lands in the
// new file, not in the old destination's.
func TestApplySettingsWaitsForTheLoggingCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	env := startInstance(t, localpgtest.Local(t), map[string]string{"log_destination": "stderr"})
	ctx := context.Background()
	conn, err := env.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for i, format := range []string{"jsonlog", "csvlog"} {
		settings := map[string]string{"log_destination": format, "log_directory": env.LogDirectory,
			"log_filename": "switched-" + format}
		if switched, err := collectorSwitched(ctx, conn, settings); err != nil || switched {
			t.Fatalf("%s: before the settings, collectorSwitched = %t, %v; want false", format, switched, err)
		}
		if err := applySettings(ctx, conn, env.Connect, settings); err != nil {
			t.Fatal(err)
		}
		if switched, err := collectorSwitched(ctx, conn, settings); err != nil || !switched {
			t.Fatalf("%s: once applied, collectorSwitched = %t, %v; want true", format, switched, err)
		}
		marker := "logbench-switched-" + format
		if _, err := conn.Exec(ctx, "DO $$BEGIN RAISE LOG '"+marker+"'; END$$"); err != nil {
			t.Fatal(err)
		}
		var file string
		if err := conn.QueryRow(ctx, "SELECT pg_current_logfile($1)", format).Scan(&file); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if filepath.Dir(file) != env.LogDirectory {
			t.Fatalf("%s: the logging collector writes %s, want a file in %s", format, file, env.LogDirectory)
		}
		if !eventuallyHolds(file, marker) {
			t.Errorf("%s: the record logged once the settings were applied is not in %s", format, file)
		}
		if i == 0 {
			continue
		}
		previous, err := os.ReadFile(filepath.Join(env.LogDirectory, "switched-jsonlog.json"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(previous, []byte(marker)) {
			t.Errorf("%s: the record went to the previous destination's file", format)
		}
	}
}

// eventuallyHolds tells whether the file holds text within a few seconds: the logging
// collector writes what it reads from its pipe a moment later.
func eventuallyHolds(path, text string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if content, err := os.ReadFile(path); err == nil && bytes.Contains(content, []byte(text)) {
			return true
		}
	}
	return false
}

// TestCollectorSwitchedWithoutTheCollector: a server without the logging collector has
// none to wait for.
func TestCollectorSwitchedWithoutTheCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	env := startInstance(t, localpgtest.Local(t), map[string]string{"logging_collector": "off"})
	ctx := context.Background()
	conn, err := env.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if switched, err := collectorSwitched(ctx, conn, map[string]string{"log_destination": "csvlog"}); err != nil || !switched {
		t.Errorf("collectorSwitched = %t, %v; want true", switched, err)
	}
}
