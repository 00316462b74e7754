package records

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/workload"
)

// csvApplicationName is the csvlog column of application_name (the 23rd in every
// PostgreSQL version since 9.0).
const csvApplicationName = 22

// csvMessage is the csvlog column of the message.
const csvMessage = 13

// groundTruthTransactions per client: enough for every session to run every statement
// many times, few enough to keep the whole test well under a minute.
const groundTruthTransactions = 15

// The ground-truth tests run every builtin workload in every query mode.
var (
	groundTruthBuiltins = []v1alpha1.BuiltinWorkload{
		v1alpha1.WorkloadSelectOnly, v1alpha1.WorkloadTPCBLike, v1alpha1.WorkloadSimpleUpdate,
	}
	groundTruthModes = []v1alpha1.QueryMode{v1alpha1.QuerySimple, v1alpha1.QueryExtended, v1alpha1.QueryPrepared}
)

// TestExpectedMatchesServer runs the tagged workloads against a real PostgreSQL, the
// local one and PostgreSQL 18, each with its own pgbench, with every statement and
// session logging setting, the server parameters the API accepts that could change the
// records, and every query mode, and checks that the records the server wrote to its
// csvlog are exactly the ones Expected predicts. The records are counted here with
// encoding/csv, independently of the production counters.
func TestExpectedMatchesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	withSessions := func(l v1alpha1.LoggingSpec, connections, disconnections bool) v1alpha1.LoggingSpec {
		l.Connections, l.Disconnections = connections, disconnections
		return l
	}
	settingsCases := []struct {
		name    string
		logging v1alpha1.LoggingSpec
		// parameters are spec.postgres.parameters.
		parameters map[string]v1alpha1.ParameterValue
		// baseline measures the destination of type None with the logging above.
		baseline bool
	}{
		{name: "baseline", logging: withSessions(logging(v1alpha1.StatementAll, -1, true), true, true), baseline: true},
		{name: "none", logging: logging(v1alpha1.StatementNone, -1, false)},
		{name: "ddl", logging: logging(v1alpha1.StatementDDL, -1, false)},
		{name: "mod", logging: logging(v1alpha1.StatementMod, -1, false)},
		{name: "all", logging: logging(v1alpha1.StatementAll, -1, false)},
		{name: "duration", logging: logging(v1alpha1.StatementNone, -1, true)},
		{name: "all-duration", logging: logging(v1alpha1.StatementAll, -1, true)},
		{name: "min0", logging: logging(v1alpha1.StatementNone, 0, false)},
		{name: "all-min0", logging: logging(v1alpha1.StatementAll, 0, false)},
		{name: "mod-min0", logging: logging(v1alpha1.StatementMod, 0, false)},
		{name: "duration-min0", logging: logging(v1alpha1.StatementNone, 0, true)},
		{name: "duration-min-slow", logging: logging(v1alpha1.StatementMod, 60000, true)},
		{name: "all-min-slow", logging: logging(v1alpha1.StatementAll, 60000, false)},
		{name: "connections", logging: withSessions(logging(v1alpha1.StatementNone, -1, false), true, false)},
		{name: "disconnections", logging: withSessions(logging(v1alpha1.StatementNone, -1, false), false, true)},
		{name: "all-duration-sessions", logging: withSessions(logging(v1alpha1.StatementAll, -1, true), true, true)},
		// The values of logging parameters that spec.postgres.parameters still accepts.
		{name: "all-verbose", logging: logging(v1alpha1.StatementAll, -1, false),
			parameters: map[string]v1alpha1.ParameterValue{"log_error_verbosity": "verbose", "log_min_messages": "log", "lc_messages": "C"}},
		{name: "min0-terse", logging: logging(v1alpha1.StatementNone, 0, false),
			parameters: map[string]v1alpha1.ParameterValue{"log_error_verbosity": "terse", "log_min_messages": "error"}},
	}

	localpgtest.Run(t, func(t *testing.T, inst localpg.Installation) {
		server := startLoggingServer(t, inst, nil)
		run := 0
		for _, sc := range settingsCases {
			destination := v1alpha1.Destination{Name: "groundtruth", Type: v1alpha1.DestinationCSVLog}
			if sc.baseline {
				destination.Type = v1alpha1.DestinationNone
			}
			spec := v1alpha1.LoggingBenchmarkSpec{
				Logging:  sc.logging,
				Postgres: v1alpha1.PostgresSpec{Parameters: sc.parameters},
			}
			// Server-wide, as the operator and the local runner set them: log_connections
			// set for a session only would apply after its "connection authorized" record.
			setServerParameters(t, server, spec.ServerParameters(destination))
			for _, builtin := range groundTruthBuiltins {
				for _, mode := range groundTruthModes {
					run++
					t.Run(fmt.Sprintf("%s/%s/%s", sc.name, builtin, mode), func(t *testing.T) {
						tag := workload.NewTag(destination.Name, 2, int32(run), "000000000000")
						exec, output := runTagged(t, server, inst.Binary("pgbench"), builtin, mode, tag)
						want := Expected(exec, SettingsFor(destination, sc.logging))
						got := countInLog(t, server, tag, sc.logging.Disconnections && !sc.baseline)
						assertCountersAgree(t, server.LogDir(), tag, got)
						if want.Estimate {
							if got < want.Records || got > want.Upper() {
								t.Errorf("%d records of %s, outside the estimate %+v", got, tag, want)
							}
							return
						}
						if got != want.Records {
							t.Errorf("%d records of %s, expected exactly %d\npgbench:\n%s", got, tag, want.Records, output)
						}
					})
				}
			}
		}
	})
}

// TestExpectedPerDestinationMatchesServer measures a settings matrix as a benchmark
// does: one spec.logging, destinations that override it field by field, and the
// baseline. Each destination's server parameters come from the spec, and its expected
// records from spec.logging and the destination alone, as the runs compute them; the
// records counted in the server's log must match exactly, and destinations with
// different settings must expect different counts.
func TestExpectedPerDestinationMatchesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	on, off, none := true, false, v1alpha1.StatementNone
	spec := v1alpha1.LoggingBenchmarkSpec{
		Logging: logging(v1alpha1.StatementAll, -1, false),
		Destinations: []v1alpha1.Destination{
			{Name: "statement", Type: v1alpha1.DestinationCSVLog},
			{Name: "duration", Type: v1alpha1.DestinationCSVLog,
				Logging: &v1alpha1.LoggingOverride{Statement: &none, Duration: &on}},
			{Name: "both", Type: v1alpha1.DestinationCSVLog, Logging: &v1alpha1.LoggingOverride{Duration: &on}},
			{Name: "sessions", Type: v1alpha1.DestinationCSVLog,
				Logging: &v1alpha1.LoggingOverride{Duration: &off, Connections: &on}},
		},
		Baseline: v1alpha1.BaselineSpec{Enabled: true},
	}
	localpgtest.Run(t, func(t *testing.T, inst localpg.Installation) {
		server := startLoggingServer(t, inst, nil)
		run := 0
		for _, mode := range []v1alpha1.QueryMode{v1alpha1.QuerySimple, v1alpha1.QueryPrepared} {
			counted := map[string]int64{}
			for _, destination := range spec.EffectiveDestinations() {
				setServerParameters(t, server, spec.ServerParameters(destination))
				run++ // a tag of its own for every run: the log keeps the earlier runs' records
				tag := workload.NewTag(destination.Name, 2, int32(run), "000000000000")
				exec, output := runTagged(t, server, inst.Binary("pgbench"), v1alpha1.WorkloadTPCBLike, mode, tag)
				want := Expected(exec, SettingsFor(destination, spec.Logging))
				got := countInLog(t, server, tag, false)
				assertCountersAgree(t, server.LogDir(), tag, got)
				if want.Estimate || got != want.Records {
					t.Errorf("%s, %s (%s): %d records, expected exactly %+v\npgbench:\n%s",
						destination.Name, mode, spec.LoggingSettings(destination), got, want, output)
				}
				counted[destination.Name] = got
			}
			// Each setting adds its own records: both holds statement's and duration's,
			// sessions adds a connection record for each of pgbench's 2 clients and its
			// own first session; the baseline logs nothing of the run.
			if counted["both"] != counted["statement"]+counted["duration"] || counted["duration"] == 0 ||
				counted[v1alpha1.BaselineName] != 0 || counted["sessions"] != counted["statement"]+3 {
				t.Errorf("%s: the destinations' settings do not show in their counts: %v", mode, counted)
			}
		}
	})
}

// TestExpectedWithPgauditMatchesServer does what TestExpectedMatchesServer does with
// pgaudit's session audit logging, on the local server with Debian's pgaudit: every
// class the builtin workloads run, alone, together, with log_statement beside it and
// with a record per relation.
func TestExpectedWithPgauditMatchesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	inst := localpgtest.WithPgaudit(t)
	audit := func(statement v1alpha1.StatementLogging, relation bool, classes ...v1alpha1.PgauditClass) v1alpha1.LoggingSpec {
		l := logging(statement, -1, false)
		l.Pgaudit = &v1alpha1.PgauditSpec{Log: classes, LogRelation: relation, LogParameter: relation}
		return l
	}
	const none, all = v1alpha1.StatementNone, v1alpha1.StatementAll
	settingsCases := []struct {
		name    string
		logging v1alpha1.LoggingSpec
	}{
		{"read", audit(none, false, v1alpha1.PgauditRead)},
		{"write", audit(none, false, v1alpha1.PgauditWrite)},
		{"misc", audit(none, false, v1alpha1.PgauditMisc)},
		{"all", audit(none, false, v1alpha1.PgauditAll)},
		{"read-write-ddl", audit(none, false, v1alpha1.PgauditRead, v1alpha1.PgauditWrite, v1alpha1.PgauditDDL)},
		{"all-log-statement-all", audit(all, false, v1alpha1.PgauditAll)},
		{"write-per-relation-with-parameters", audit(none, true, v1alpha1.PgauditWrite)},
	}
	server := startLoggingServer(t, inst, map[string]string{"shared_preload_libraries": "pgaudit"})
	destination := v1alpha1.Destination{Name: "pgaudit", Type: v1alpha1.DestinationCSVLog}
	run := 0
	for _, sc := range settingsCases {
		spec := v1alpha1.LoggingBenchmarkSpec{Logging: sc.logging}
		setServerParameters(t, server, spec.ServerParameters(destination))
		for _, builtin := range groundTruthBuiltins {
			for _, mode := range groundTruthModes {
				run++
				t.Run(fmt.Sprintf("%s/%s/%s", sc.name, builtin, mode), func(t *testing.T) {
					tag := workload.NewTag(destination.Name, 2, int32(run), "000000000000")
					exec, output := runTagged(t, server, inst.Binary("pgbench"), builtin, mode, tag)
					want := Expected(exec, SettingsFor(destination, sc.logging))
					got := countInLog(t, server, tag, false)
					assertCountersAgree(t, server.LogDir(), tag, got)
					if want.Estimate || got != want.Records {
						t.Errorf("%d records of %s, expected exactly %+v\npgbench:\n%s", got, tag, want, output)
					}
				})
			}
		}
	}
}

func logging(statement v1alpha1.StatementLogging, minDurationMs int32, duration bool) v1alpha1.LoggingSpec {
	return v1alpha1.LoggingSpec{Statement: statement, MinDurationStatement: &minDurationMs, Duration: duration}
}

// startLoggingServer starts a throwaway server of inst writing stderr, csvlog and
// jsonlog files and creates the pgbench tables at scale 1.
func startLoggingServer(t *testing.T, inst localpg.Installation, extra map[string]string) *localpg.Server {
	t.Helper()
	return startServer(t, inst, "", extra)
}

// startServer starts the server of startLoggingServer, its syslog() reaching devLog
// when that is not empty.
func startServer(t *testing.T, inst localpg.Installation, devLog string, extra map[string]string) *localpg.Server {
	t.Helper()
	// The OS user postgres must traverse the server's parent directory when the tests
	// run as root, and t.TempDir is closed to other users.
	parent, err := os.MkdirTemp("", "records-groundtruth-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// The API's default line prefix: stderr-format records carry the tag through %a.
	settings := map[string]string{"logging_collector": "on", "log_destination": "stderr,csvlog,jsonlog",
		"log_line_prefix": "%m [%p] %q%u@%d %a "}
	maps.Copy(settings, extra)
	server, err := localpg.Start(context.Background(), localpg.Config{
		Installation: inst,
		Dir:          parent,
		Settings:     settings,
		DevLog:       devLog,
	})
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	t.Cleanup(func() {
		if err := server.Stop(context.Background()); err != nil {
			t.Logf("stopping PostgreSQL: %v", err)
		}
	})
	if output, err := pgbenchCommand(inst.Binary("pgbench"), server, nil, pgbench.InitArgs(1, true)).CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, output)
	}
	return server
}

// connect opens a session, which the caller closes: a test may open many in turn.
func connect(t *testing.T, connString string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), connString)
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// setServerParameters sets parameters with ALTER SYSTEM and waits until new sessions
// get them.
func setServerParameters(t *testing.T, server *localpg.Server, parameters map[string]string) {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, server.ConnString())
	defer conn.Close(ctx)
	for name, value := range parameters {
		if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = '%s'", name, strings.ReplaceAll(value, "'", "''"))); err != nil {
			t.Fatalf("ALTER SYSTEM SET %s: %v", name, err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		pending := pendingParameters(t, server, parameters)
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("new sessions still do not have %v 10s after the reload", pending)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pendingParameters returns the parameters a new session does not have yet, compared in
// pg_settings' own units.
func pendingParameters(t *testing.T, server *localpg.Server, parameters map[string]string) []string {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, server.ConnString())
	defer conn.Close(ctx)
	var pending []string
	for name, want := range parameters {
		var got string
		if err := conn.QueryRow(ctx, "SELECT setting FROM pg_settings WHERE name = $1", name).Scan(&got); err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if !strings.EqualFold(got, want) {
			pending = append(pending, name+"="+want)
		}
	}
	return pending
}

func pgbenchCommand(path string, server *localpg.Server, env []string, args []string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Env = append(append(os.Environ(), server.Env()...), env...)
	return cmd
}

// runTagged runs the tagged builtin under the server's current settings.
func runTagged(
	t *testing.T,
	server *localpg.Server,
	pgbenchPath string,
	builtin v1alpha1.BuiltinWorkload,
	mode v1alpha1.QueryMode,
	tag string,
) (Execution, []byte) {
	t.Helper()
	script, err := workload.ForBuiltin(builtin, tag)
	if err != nil {
		t.Fatal(err)
	}
	return runScript(t, server, pgbenchPath, script, mode, tag)
}

// countInLog waits until the logging collector has written everything logged before a
// marker statement (it writes records in the order backends sent them, and the run's
// sessions have ended), then counts the records of tag. A session's disconnection
// record is the exception: its backend logs it while exiting, after pgbench has gone,
// so with sessionEnds the count must also stay still for disconnectionSettle.
func countInLog(t *testing.T, server *localpg.Server, tag string, sessionEnds bool) int64 {
	t.Helper()
	ctx := context.Background()
	// The marker must not contain the tag, or the counters would count its record too.
	marker := "marker_" + strings.TrimPrefix(tag, "lb_")
	conn := connect(t, server.ConnString()+"&application_name="+marker)
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SET log_statement = 'all'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var counted int64 = -1
	var still time.Time
	for {
		counts, err := countApplicationNames(server.LogDir(), tag, marker)
		switch {
		case err != nil && time.Now().After(deadline):
			t.Fatal(err)
		case err != nil:
			// The logging collector may be midway through writing a record: its last
			// quoted field is still open. Read again once the record is whole.
		case counts[marker] > 0:
			if !sessionEnds {
				return counts[tag]
			}
			if counts[tag] != counted {
				counted, still = counts[tag], time.Now()
			} else if time.Since(still) >= disconnectionSettle {
				return counted
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the records of %s did not reach the csvlog in %s and stay still within 10s", tag, server.LogDir())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// disconnectionSettle is how long the count of a run whose disconnections are logged
// must stay unchanged: far longer than a backend takes to exit.
const disconnectionSettle = 300 * time.Millisecond

// assertCountersAgree checks that the production counter of every file format finds the
// records the csv oracle found: the server writes each record to all three formats.
func assertCountersAgree(t *testing.T, dir, tag string, oracle int64) {
	t.Helper()
	for format, pattern := range map[Format]string{FormatStderr: "*.log", FormatCSVLog: "*.csv", FormatJSONLog: "*.json"} {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		var counted int64
		for _, name := range files {
			counter := NewCounter(format, tag)
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(counter, f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			counted += counter.Count()
		}
		if counted != oracle {
			t.Errorf("%s counter found %d records of %s, the csvlog holds %d", format, counted, tag, oracle)
		}
	}
}

// countApplicationNames counts the csvlog records of the given application names in
// every file of dir: those of a session with that name, and those whose message names
// it ("connection authorized: ... application_name=<name>" comes before the session has
// its name).
func countApplicationNames(dir string, names ...string) (map[string]int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.csv"))
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	for _, name := range files {
		if err := countFile(name, names, counts); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return counts, nil
}

func countFile(path string, names []string, counts map[string]int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	reader := csv.NewReader(f)
	reader.FieldsPerRecord = -1
	for {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(record) <= csvApplicationName {
			return fmt.Errorf("csvlog record with %d fields", len(record))
		}
		for _, name := range names {
			if recordNames(record, name) {
				counts[name]++
			}
		}
	}
}

func recordNames(record []string, name string) bool {
	return record[csvApplicationName] == name || strings.Contains(record[csvMessage], "application_name="+name)
}
