// Package groundtruth tests the logbench_counter extension (the folder above) on the
// servers it counts for: it builds the extension with PGXS for the local PostgreSQL and
// for PostgreSQL 18, preloads it, runs pgbench and sessions under logging settings whose
// record counts no model predicts (sampling, slow-query thresholds, auto_explain, lock
// waits, session ends, every level), and checks that the counter holds exactly the
// records of the server's own csvlog file, by application_name and by level.
package groundtruth

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/logbench_counter/countersql"
)

const (
	// settle is how long the counter and the csvlog must agree, unchanged, before a
	// comparison passes: a backend logs its disconnection and its exit's DEBUG records
	// after its client has gone, and the logging collector writes a moment later.
	settle = 300 * time.Millisecond
	// agreementTimeout bounds the wait for the two to agree.
	agreementTimeout = 20 * time.Second
	// maxApplicationNames is the smallest table the extension allows, which the
	// overflow subtest fills.
	maxApplicationNames = 16
	// readerName is the application_name of the session that reads the counter.
	readerName = "lb_counter_reader"
	// overflowName stands for the counter's NULL application_name: the records of
	// names that found the table full.
	overflowName = "\x00overflow"
)

// The csvlog columns read here (0-based; the same in every version since 9.0).
const (
	csvSeverity        = 11
	csvMessage         = 13
	csvApplicationName = 22
)

// levels holds records by level, as the counter names levels (every DEBUGn is DEBUG),
// without zero counts.
type levels map[string]int64

// pgbenchCase is a pgbench run under logging settings applied to its sessions only.
type pgbenchCase struct {
	name string
	// options are the sessions' settings (PGOPTIONS), e.g. "log_statement=all".
	options []string
	args    []string
	// wantLevels must have records, and some of the run's records must contain each
	// of wantMessages: the case exercises what it names.
	wantLevels   []string
	wantMessages []string
}

var pgbenchCases = []pgbenchCase{
	{name: "statement_all", options: []string{"log_statement=all"},
		args:       []string{"-c", "2", "-T", "2", "-S", "-M", "prepared"},
		wantLevels: []string{"LOG"}, wantMessages: []string{"execute P_0: "}},
	{name: "statement_sample",
		options:    []string{"log_min_duration_sample=0", "log_statement_sample_rate=0.1"},
		args:       []string{"-c", "2", "-T", "2", "-M", "simple"},
		wantLevels: []string{"LOG"}, wantMessages: []string{"statement: UPDATE"}},
	{name: "transaction_sample", options: []string{"log_transaction_sample_rate=0.1"},
		args:       []string{"-c", "2", "-T", "2", "-M", "prepared"},
		wantLevels: []string{"LOG"}, wantMessages: []string{"execute P_0: "}},
	// Eight clients updating scale 1's one branch row wait for each other's locks.
	{name: "slow_explain_lock_waits",
		options: []string{"log_min_duration_statement=0", "auto_explain.log_min_duration=0",
			"log_lock_waits=on", "deadlock_timeout=1ms"},
		args:       []string{"-c", "8", "-T", "2", "-M", "prepared"},
		wantLevels: []string{"LOG"}, wantMessages: []string{"plan:", "still waiting for", "acquired"}},
	// A connection per transaction: each session's "connection authorized" comes before
	// its application_name applies, its disconnection after its slot is released.
	{name: "sessions", options: []string{"log_disconnections=on"},
		args:       []string{"-C", "-c", "2", "-T", "1", "-S"},
		wantLevels: []string{"LOG"}, wantMessages: []string{"connection authorized: ", "disconnection: "}},
}

// pgauditCase runs with pgaudit loaded before the counter, whose hook chains to
// pgaudit's.
var pgauditCase = pgbenchCase{name: "pgaudit", options: []string{"pgaudit.log=read,write"},
	args:       []string{"-c", "2", "-T", "1", "-M", "prepared"},
	wantLevels: []string{"LOG"}, wantMessages: []string{"AUDIT: SESSION,"}}

// TestCounterMatchesServerLog checks the counter against the server's csvlog on the
// local PostgreSQL and on PostgreSQL 18: the records of tagged pgbench runs under every
// kind of logging setting, of a session logging at every level, of the sessions with no
// application_name and the background processes, and of names beyond the table.
func TestCounterMatchesServerLog(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a PostgreSQL extension and starts PostgreSQL servers")
	}
	localpgtest.Run(t, func(t *testing.T, inst localpg.Installation) {
		library := buildCounter(t, inst)
		preload := []string{"auto_explain", library}
		withPgaudit := inst.HasLibrary("pgaudit")
		if withPgaudit {
			preload = append([]string{"pgaudit"}, preload...)
		}
		server := startServer(t, inst, preload)
		installFunctions(t, server, library)
		reader := connect(t, server, map[string]string{"application_name": readerName})
		tally := &csvTally{dir: server.LogDir()}
		since := countingSince(t, reader)

		cases := pgbenchCases
		if withPgaudit || inst.Version != 18 {
			cases = append(slices.Clone(cases), pgauditCase)
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.name == pgauditCase.name && !withPgaudit {
					testenv.Missing(t, "PostgreSQL %d has no pgaudit, so the counter is not tested "+
						"behind pgaudit's hook: install postgresql-%d-pgaudit (Debian; .ci/run does)",
						inst.Version, inst.Version)
				}
				tag := "lb_counter_" + c.name
				tally.watch(tag, c.wantMessages)
				runPgbench(t, inst, server, tag, c.options, c.args)
				got := agree(t, reader, tally, tag, nil, nil)
				assertLevels(t, tag, got, c.wantLevels)
				for _, message := range c.wantMessages {
					if !tally.found[tag][message] {
						t.Errorf("%s: no record contains %q: the case does not exercise what it names", tag, message)
					}
				}
			})
		}
		t.Run("levels", func(t *testing.T) { testLevels(t, server, reader, tally) })
		t.Run("untagged", func(t *testing.T) { testUntagged(t, server, reader, tally) })
		// Last: it fills the table of names.
		t.Run("overflow", func(t *testing.T) { testOverflow(t, server, reader, tally) })
		if later := countingSince(t, reader); !later.Equal(since) || since.After(time.Now()) {
			t.Errorf("counting_since() was %s, then %s: it must be the server's start, unchanged", since, later)
		}
	})
}

func countingSince(t *testing.T, reader *pgx.Conn) time.Time {
	t.Helper()
	var since time.Time
	if err := reader.QueryRow(context.Background(), "SELECT logbench_counter.counting_since()").Scan(&since); err != nil {
		t.Fatal(err)
	}
	return since
}

// testLevels logs records of every level but PANIC from one session: DEBUG with
// log_min_messages=debug5 (its exit's DEBUG records come after its slot is released),
// INFO, NOTICE and WARNING from PL/pgSQL, an ERROR, and the FATAL of its termination.
func testLevels(t *testing.T, server *localpg.Server, reader *pgx.Conn, tally *csvTally) {
	ctx := context.Background()
	const tag = "lb_counter_levels"
	conn := connect(t, server, map[string]string{"application_name": tag})
	for _, sql := range []string{
		"SET log_min_messages = debug5",
		"DO $$BEGIN RAISE INFO 'info'; RAISE NOTICE 'notice'; RAISE WARNING 'warning'; END$$",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT 1/0"); err == nil {
		t.Fatal("SELECT 1/0 did not fail")
	}
	var pid int32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Exec(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	got := agree(t, reader, tally, tag, nil, nil)
	assertLevels(t, tag, got, []string{"DEBUG", "LOG", "INFO", "NOTICE", "WARNING", "ERROR", "FATAL"})
}

// testUntagged checks the records of processes with no application_name while nothing
// else logs untagged (autovacuum is off, no checkpoint is due): a session's
// connection records, statements, a warning and an error, and the checkpointer's
// records of the checkpoint it asks for.
func testUntagged(t *testing.T, server *localpg.Server, reader *pgx.Conn, tally *csvTally) {
	ctx := context.Background()
	counterBase, fileBase := quietUntagged(t, reader, tally)
	conn := connect(t, server, map[string]string{"application_name": "", "log_statement": "all"})
	for _, sql := range []string{"SELECT 1", "DO $$BEGIN RAISE WARNING 'untagged'; END$$", "CHECKPOINT"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT 1/0"); err == nil {
		t.Fatal("SELECT 1/0 did not fail")
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := agree(t, reader, tally, "", counterBase, fileBase)
	assertLevels(t, "untagged", got, []string{"LOG", "WARNING", "ERROR"})
}

// testOverflow opens sessions of new names until the table is full and beyond: the
// names that fit count apart, exactly; the records of the others count together, under
// NULL, exactly as many as the csvlog holds of them.
func testOverflow(t *testing.T, server *localpg.Server, reader *pgx.Conn, tally *csvTally) {
	ctx := context.Background()
	overflowBase := readCounter(t, reader)[overflowName]
	names := make([]string, 0, maxApplicationNames+4)
	for i := range cap(names) {
		name := fmt.Sprintf("lb_counter_overflow_%02d", i)
		names = append(names, name)
		conn := connect(t, server, map[string]string{"application_name": name, "log_statement": "all"})
		if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
			t.Fatal(err)
		}
		if err := conn.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the overflow names", func() (bool, string) {
		counted := readCounter(t, reader)
		err := tally.update()
		var report strings.Builder
		agreed := err == nil
		unlisted := levels{}
		for _, name := range names {
			inFile := tally.records(name)
			if got, listed := counted[name]; listed {
				agreed = agreed && maps.Equal(got, inFile)
				fmt.Fprintf(&report, "%s: counter %v, csvlog %v\n", name, got, inFile)
			} else {
				unlisted = sum(unlisted, inFile)
			}
		}
		overflowed := difference(counted[overflowName], overflowBase)
		agreed = agreed && len(unlisted) > 0 && maps.Equal(overflowed, unlisted)
		named := 0
		for name := range counted {
			if name != "" && name != overflowName {
				named++
			}
		}
		agreed = agreed && named == maxApplicationNames
		fmt.Fprintf(&report, "overflow: counter %v, csvlog's unlisted names %v; %d names listed, table of %d (csvlog: %v)",
			overflowed, unlisted, named, maxApplicationNames, err)
		return agreed, report.String()
	})
}

// TestCounterRefusesWithoutPreload checks that records() says how to load the
// extension when the server did not preload it.
func TestCounterRefusesWithoutPreload(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a PostgreSQL extension and starts a PostgreSQL server")
	}
	inst := localpgtest.Local(t)
	library := buildCounter(t, inst)
	server := startServer(t, inst, nil)
	installFunctions(t, server, library)
	conn := connect(t, server, nil)
	_, err := conn.Exec(context.Background(), "SELECT * FROM logbench_counter.records()")
	if err == nil || !strings.Contains(err.Error(), "must be loaded via shared_preload_libraries") {
		t.Fatalf("records() without the library preloaded: %v, want an error saying to preload it", err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	localpgtest.RemoveCounterBuilds()
	os.Exit(code)
}

// buildCounter builds the extension for inst (localpgtest.CounterLibrary).
func buildCounter(t *testing.T, inst localpg.Installation) string {
	t.Helper()
	return localpgtest.CounterLibrary(t, inst)
}

// startServer starts a server of inst that writes only csvlog, in one file, logs every
// connection and checkpoint, and logs nothing untagged unasked (no autovacuum, no timed
// checkpoint), with the pgbench tables at scale 1.
func startServer(t *testing.T, inst localpg.Installation, preload []string) *localpg.Server {
	t.Helper()
	// The OS user postgres must traverse the server's parent directory when the tests
	// run as root, and t.TempDir is closed to other users.
	parent, err := os.MkdirTemp("", "logbench-counter-")
	if err == nil {
		err = os.Chmod(parent, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	settings := map[string]string{
		"logging_collector":                      "on",
		"log_destination":                        "csvlog",
		"log_rotation_size":                      "0",
		"log_connections":                        "on",
		"log_checkpoints":                        "on",
		"autovacuum":                             "off",
		"checkpoint_timeout":                     "1h",
		"logbench_counter.max_application_names": fmt.Sprint(maxApplicationNames),
	}
	if len(preload) > 0 {
		settings["shared_preload_libraries"] = strings.Join(preload, ",")
	}
	server, err := localpg.Start(context.Background(), localpg.Config{Installation: inst, Dir: parent, Settings: settings})
	if err != nil {
		t.Fatalf("starting PostgreSQL %d: %v", inst.Version, err)
	}
	t.Cleanup(func() {
		if err := server.Stop(context.Background()); err != nil {
			t.Logf("stopping PostgreSQL: %v", err)
		}
	})
	initialize := exec.Command(inst.Binary("pgbench"), "-i", "-s", "1", "-q", "--unlogged-tables")
	initialize.Env = append(os.Environ(), server.UnixSocketEnv()...)
	if output, err := initialize.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, output)
	}
	return server
}

// installFunctions runs the extension's SQL script as CREATE EXTENSION would, with the
// library's path for MODULE_PATHNAME: the installation's extension directory is not the
// test's to write.
func installFunctions(t *testing.T, server *localpg.Server, library string) {
	t.Helper()
	conn := connect(t, server, nil)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), countersql.FunctionsSQL(library)); err != nil {
		t.Fatalf("installing logbench_counter's functions: %v", err)
	}
}

// connect opens a session with the given startup parameters (application_name and
// settings); the test's end closes it.
func connect(t *testing.T, server *localpg.Server, params map[string]string) *pgx.Conn {
	t.Helper()
	config, err := pgx.ParseConfig(server.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	// PGAPPNAME in the environment must not name the test's sessions.
	delete(config.RuntimeParams, "application_name")
	maps.Copy(config.RuntimeParams, params)
	conn, err := pgx.ConnectConfig(context.Background(), config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func runPgbench(t *testing.T, inst localpg.Installation, server *localpg.Server, tag string, options, args []string) {
	t.Helper()
	cmd := exec.Command(inst.Binary("pgbench"), args...)
	pgOptions := make([]string, 0, len(options))
	for _, option := range options {
		pgOptions = append(pgOptions, "-c "+option)
	}
	cmd.Env = append(os.Environ(), server.UnixSocketEnv()...)
	cmd.Env = append(cmd.Env, "PGAPPNAME="+tag, "PGOPTIONS="+strings.Join(pgOptions, " "))
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, output)
	}
}

// readCounter returns the counter's records by application_name ("" for none,
// overflowName for the names beyond the table) and level.
func readCounter(t *testing.T, reader *pgx.Conn) map[string]levels {
	t.Helper()
	rows, err := reader.Query(context.Background(),
		"SELECT application_name, level, records FROM logbench_counter.records()")
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]levels{}
	for rows.Next() {
		var name *string
		var level string
		var records int64
		if err := rows.Scan(&name, &level, &records); err != nil {
			t.Fatal(err)
		}
		key := overflowName
		if name != nil {
			key = *name
		}
		if counted[key] == nil {
			counted[key] = levels{}
		}
		counted[key][level] += records
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return counted
}

// agree waits until the counter and the csvlog hold the same records of name, by
// level, beyond their bases, and returns them.
func agree(t *testing.T, reader *pgx.Conn, tally *csvTally, name string, counterBase, fileBase levels) levels {
	t.Helper()
	var counted levels
	eventually(t, fmt.Sprintf("the records of %q", name), func() (bool, string) {
		counted = difference(readCounter(t, reader)[name], counterBase)
		err := tally.update()
		inFile := difference(tally.records(name), fileBase)
		return err == nil && maps.Equal(counted, inFile),
			fmt.Sprintf("counter %v, csvlog %v (csvlog read: %v)", counted, inFile, err)
	})
	return counted
}

// quietUntagged waits until the counter's and the csvlog's untagged records stay
// unchanged, and returns both.
func quietUntagged(t *testing.T, reader *pgx.Conn, tally *csvTally) (counted, inFile levels) {
	t.Helper()
	eventually(t, "quiet untagged records", func() (bool, string) {
		counted = difference(readCounter(t, reader)[""], nil)
		err := tally.update()
		inFile = difference(tally.records(""), nil)
		return err == nil, fmt.Sprintf("counter %v, csvlog %v (csvlog read: %v)", counted, inFile, err)
	})
	return counted, inFile
}

// eventually polls check until it reports agreement with the same report for settle,
// and fails the test with the last report after agreementTimeout.
func eventually(t *testing.T, what string, check func() (agreed bool, report string)) {
	t.Helper()
	deadline := time.Now().Add(agreementTimeout)
	var agreedReport string
	var since time.Time
	for {
		agreed, report := check()
		switch {
		case !agreed:
			agreedReport = ""
		case report != agreedReport:
			agreedReport, since = report, time.Now()
		case time.Since(since) >= settle:
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no agreement that lasted %s within %s; last:\n%s", what, settle, agreementTimeout, report)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func assertLevels(t *testing.T, what string, got levels, want []string) {
	t.Helper()
	for _, level := range want {
		if got[level] == 0 {
			t.Errorf("%s: no %s records (%v): the case does not exercise what it names", what, level, got)
		}
	}
	t.Logf("%s: counter = csvlog: %v", what, got)
}

// difference returns a - b by level, without zero counts.
func difference(a, b levels) levels {
	d := levels{}
	for level, n := range a {
		if n -= b[level]; n != 0 {
			d[level] = n
		}
	}
	for level, n := range b {
		if _, seen := a[level]; !seen && n != 0 {
			d[level] = -n
		}
	}
	return d
}

func sum(a, b levels) levels {
	s := maps.Clone(a)
	for level, n := range b {
		s[level] += n
	}
	return s
}

// csvTally counts the records of csvlog files by application_name and level, reading
// on from where it stopped: only whole records, so that a record the logging collector
// is still writing is read whole on a later update.
type csvTally struct {
	dir     string
	offsets map[string]int64
	counts  map[string]levels
	// watched holds texts to look for in the messages of a name's records; found,
	// those seen.
	watched map[string][]string
	found   map[string]map[string]bool
}

// watch makes the tally look for texts in the messages of name's records read from
// now on.
func (c *csvTally) watch(name string, texts []string) {
	if c.watched == nil {
		c.watched, c.found = map[string][]string{}, map[string]map[string]bool{}
	}
	c.watched[name] = texts
	c.found[name] = map[string]bool{}
}

func (c *csvTally) update() error {
	if c.offsets == nil {
		c.offsets, c.counts = map[string]int64{}, map[string]levels{}
	}
	files, err := filepath.Glob(filepath.Join(c.dir, "*.csv"))
	if err != nil {
		return err
	}
	for _, file := range files {
		if err := c.updateFile(file); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	return nil
}

func (c *csvTally) updateFile(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(c.offsets[file], io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return nil
	}
	reader := csv.NewReader(bytes.NewReader(data[:end+1]))
	reader.FieldsPerRecord = -1
	var consumed int64
	for {
		record, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// A record cut at a line break inside a quoted field: its end is not
			// written yet.
			break
		}
		if len(record) <= csvApplicationName {
			return fmt.Errorf("a csvlog record with %d fields at offset %d", len(record), c.offsets[file]+consumed)
		}
		c.add(record)
		consumed = reader.InputOffset()
	}
	c.offsets[file] += consumed
	return nil
}

// add counts a record under its application_name or, for "connection authorized",
// which the server logs before the session's application_name applies, under the name
// the message reports, as the counter does.
func (c *csvTally) add(record []string) {
	name := record[csvApplicationName]
	if message := record[csvMessage]; name == "" && strings.HasPrefix(message, "connection authorized: ") {
		if _, after, found := strings.Cut(message, " application_name="); found {
			name, _, _ = strings.Cut(after, " ")
		}
	}
	level := record[csvSeverity]
	if strings.HasPrefix(level, "DEBUG") {
		level = "DEBUG"
	}
	if c.counts[name] == nil {
		c.counts[name] = levels{}
	}
	c.counts[name][level]++
	for _, text := range c.watched[name] {
		if strings.Contains(record[csvMessage], text) {
			c.found[name][text] = true
		}
	}
}

func (c *csvTally) records(name string) levels {
	return maps.Clone(c.counts[name])
}
