package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/internal/shipping"
)

// FileLogDirectory is where file destinations write, the instance pod's log volume
// (shipping.LogDirectory).
// Shipping destinations write there too, for their sidecar to read.
const FileLogDirectory = shipping.LogDirectory

// applySettings sets the destination's settings with ALTER SYSTEM, reloads, and waits
// until new sessions see them and the logging collector writes where they say. A server
// that has them already, from its runner's earlier run, is left alone.
func applySettings(
	ctx context.Context,
	conn *pgx.Conn,
	connect func(context.Context) (*pgx.Conn, error),
	settings map[string]string,
) error {
	if len(settings) == 0 {
		return nil
	}
	if applied, err := settingsApplied(ctx, connect, settings); err != nil || applied {
		return err
	}
	for name, value := range settings {
		// ALTER SYSTEM takes no bind parameters; names are our constants and values
		// are quoted as literals.
		stmt := fmt.Sprintf("ALTER SYSTEM SET %s = %s", pgx.Identifier{name}.Sanitize(), quoteLiteral(value))
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("reloading configuration: %w", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		applied, err := settingsApplied(ctx, connect, settings)
		if err == nil && applied {
			applied, err = collectorSwitched(ctx, conn, settings)
		}
		if err != nil {
			return err
		}
		if applied {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not apply %v within 30s", settings)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logFileFormats are the formats of log_destination that the logging collector writes
// to files (pg_current_logfile's formats).
var logFileFormats = []string{"stderr", "csvlog", "jsonlog"}

// collectorSwitched tells whether the logging collector writes each file format of the
// settings' log_destination in their log_directory. It switches files when it handles
// the reload, after the postmaster: until then, it writes the records of sessions that
// see the new destination to the file of the old one.
func collectorSwitched(ctx context.Context, conn *pgx.Conn, settings map[string]string) (bool, error) {
	destinations, set := settings["log_destination"]
	if !set {
		return true, nil
	}
	var collector string
	if err := conn.QueryRow(ctx, "SELECT current_setting('logging_collector')").Scan(&collector); err != nil {
		return false, fmt.Errorf("reading logging_collector: %w", err)
	}
	if collector != "on" {
		return true, nil
	}
	for destination := range strings.SplitSeq(destinations, ",") {
		format := strings.TrimSpace(destination)
		if !slices.Contains(logFileFormats, format) {
			continue
		}
		var file *string
		if err := conn.QueryRow(ctx, "SELECT pg_current_logfile($1)", format).Scan(&file); err != nil {
			return false, fmt.Errorf("reading the current %s file: %w", format, err)
		}
		if file == nil {
			return false, nil
		}
		if directory, set := settings["log_directory"]; set && filepath.Dir(*file) != filepath.Clean(directory) {
			return false, nil
		}
	}
	return true, nil
}

func settingsApplied(
	ctx context.Context,
	connect func(context.Context) (*pgx.Conn, error),
	settings map[string]string,
) (bool, error) {
	conn, err := connect(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	for name, want := range settings {
		var got string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&got); err != nil {
			return false, fmt.Errorf("reading %s: %w", name, err)
		}
		if got != want {
			return false, nil
		}
	}
	return true, nil
}

func quoteLiteral(s string) string {
	quoted := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			quoted = append(quoted, '\'')
		}
		quoted = append(quoted, s[i])
	}
	return string(append(quoted, '\''))
}
