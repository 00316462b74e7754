package records

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/workload"
)

// TestSyslogCounterMatchesServer has a real PostgreSQL, the local one and 18, send its
// records with syslog() to a socket of the test (bound at /dev/log in the server's own
// mount namespace, as logbench's local runner does) while it writes the same records to
// its csvlog, and checks, run by run, that the SyslogCounter finds in the messages
// exactly the records of the run that the csvlog holds and that Expected predicts: with
// and without sequence numbers and splitting, with statements longer than
// PG_SYSLOG_LIMIT cut before a space and through a word, multi-line statements, and the
// parameters' DETAIL lines of prepared statements. One case drops %a from the line
// prefix, so that the tag is only in a statement's comment, after the first chunk and
// cut in two by a split.
func TestSyslogCounterMatchesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "the server's syslog() reaches the test's socket only in a mount namespace of its own, "+
			"which needs root")
	}
	type settingsCase struct {
		name     string
		syslog   SyslogSettings
		noAppTag bool
	}
	cases := make([]settingsCase, 0, 5)
	for _, sequence := range []bool{true, false} {
		for _, split := range []bool{true, false} {
			cases = append(cases, settingsCase{
				name:   fmt.Sprintf("sequence-%t/split-%t", sequence, split),
				syslog: SyslogSettings{SequenceNumbers: sequence, SplitMessages: split},
			})
		}
	}
	cases = append(cases, settingsCase{name: "tag-only-in-comments",
		syslog: SyslogSettings{SequenceNumbers: true, SplitMessages: true}, noAppTag: true})

	localpgtest.Run(t, func(t *testing.T, inst localpg.Installation) {
		receiver := receiveSyslog(t)
		server := startSyslogServer(t, inst, receiver.socket)
		destination := v1alpha1.Destination{Name: "syslog", Type: v1alpha1.DestinationSyslog}
		run := 0
		for _, sc := range cases {
			l := logging(v1alpha1.StatementAll, -1, !sc.noAppTag)
			spec := v1alpha1.LoggingBenchmarkSpec{Logging: l}
			parameters := spec.ServerParameters(destination)
			parameters["syslog_sequence_numbers"] = onOff(sc.syslog.SequenceNumbers)
			parameters["syslog_split_messages"] = onOff(sc.syslog.SplitMessages)
			parameters["log_line_prefix"] = "%m [%p] %q%u@%d %a "
			if sc.noAppTag {
				parameters["log_line_prefix"] = "%m [%p] %q%u@%d "
			}
			setServerParameters(t, server, parameters)
			for _, mode := range groundTruthModes {
				run++
				t.Run(fmt.Sprintf("%s/%s", sc.name, mode), func(t *testing.T) {
					tag := workload.NewTag(destination.Name, 2, int32(run), "000000000000")
					receiver.reset()
					exec, output := runScript(t, server, inst.Binary("pgbench"), longAndMultiLineScript(tag), mode, tag)
					oracle := countInLog(t, server, tag, false)
					messages := receiver.sync(t, server, "syslog_marker_"+strings.TrimPrefix(tag, "lb_"))
					counter := NewSyslogCounter(sc.syslog, tag)
					lines := NewSyslogLineCounter(sc.syslog, tag)
					split := 0
					for _, message := range messages {
						counter.Add(message)
						if _, err := lines.Write(SyslogLine(nil, message)); err != nil {
							t.Fatal(err)
						}
						if bytes.Contains(message, []byte("-2] ")) {
							split++
						}
					}
					t.Logf("%d messages, %d records of the run, %d second chunks", len(messages), oracle, split)
					if counter.Malformed() > 0 {
						t.Errorf("%d of %d messages are not PostgreSQL's syslog messages", counter.Malformed(), len(messages))
					}
					if counter.Count() != oracle || lines.Count() != oracle {
						t.Errorf("syslog counter found %d records of %s and the line counter %d, the csvlog holds %d",
							counter.Count(), tag, lines.Count(), oracle)
					}
					if sc.syslog.SplitMessages && sc.syslog.SequenceNumbers && split == 0 {
						t.Errorf("no record of %s was split, the test proves nothing about splitting", tag)
					}
					if sc.noAppTag {
						// The tag is in the statement records only: Expected counts durations too.
						return
					}
					want := Expected(exec, SettingsFor(destination, l))
					if want.Estimate || oracle != want.Records {
						t.Errorf("the csvlog holds %d records of %s, expected exactly %+v\npgbench:\n%s", oracle, tag, want, output)
					}
				})
			}
		}
	})
}

// longAndMultiLineScript is a read-only transaction whose statements make PostgreSQL
// split their records: a line longer than PG_SYSLOG_LIMIT with spaces, words longer
// than it with the tag cut at different places, and a statement over several lines.
func longAndMultiLineScript(tag string) workload.Script {
	comment := " /* " + tag + " */;"
	sqls := make([]string, 0, 7)
	sqls = append(sqls,
		"SELECT abalance FROM pgbench_accounts WHERE aid = :aid /* "+strings.Repeat("filler ", 300)+"*/"+comment,
		"SELECT abalance\nFROM pgbench_accounts\n  WHERE aid = :aid"+comment,
	)
	// A word longer than PG_SYSLOG_LIMIT is cut at the limit, after the space before it:
	// its tag is cut in two when it starts less than len(tag) bytes before the limit.
	for _, filler := range []int{850, 870, 880, 890, 897} {
		sqls = append(sqls, "SELECT 1 /* "+strings.Repeat("x", filler)+tag+" */;")
	}
	var script workload.Script
	script.Text = "\\set aid random(1, 100000 * :scale)\n"
	for _, sql := range sqls {
		script.Statements = append(script.Statements, workload.Statement{SQL: sql, Class: workload.ClassRead})
		script.Text += sql + "\n"
	}
	return script
}

// runScript runs script under the server's current settings, its sessions named tag.
func runScript(
	t *testing.T, server *localpg.Server, pgbenchPath string, script workload.Script, mode v1alpha1.QueryMode, tag string,
) (Execution, []byte) {
	t.Helper()
	scriptFile := filepath.Join(t.TempDir(), "script.pgbench")
	if err := os.WriteFile(scriptFile, []byte(script.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	const clients = 2
	args := pgbench.RunArgs(pgbench.Options{Scripts: []pgbench.Script{{File: scriptFile, Weight: 1}}, Clients: clients, Threads: 1,
		Transactions: groundTruthTransactions, QueryMode: mode, Scale: 1})
	output, err := pgbenchCommand(pgbenchPath, server, []string{"PGAPPNAME=" + tag}, args).CombinedOutput()
	if err != nil {
		t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, output)
	}
	result, err := pgbench.Parse(output)
	if err != nil {
		t.Fatalf("%v\n%s", err, output)
	}
	if result.Transactions != clients*groundTruthTransactions {
		t.Fatalf("pgbench processed %d transactions, want %d\n%s", result.Transactions, clients*groundTruthTransactions, output)
	}
	return Execution{Script: script, QueryMode: mode, Clients: clients, Transactions: result.Transactions,
		Failed: result.Failed, Statements: result.Statements}, output
}

// startSyslogServer starts a server of inst whose syslog() reaches socket, writing its
// records to syslog and to csvlog, the oracle.
func startSyslogServer(t *testing.T, inst localpg.Installation, socket string) *localpg.Server {
	t.Helper()
	return startServer(t, inst, socket, map[string]string{"logging_collector": "on", "log_destination": "syslog,csvlog"})
}

// syslogSink is a Unix datagram socket that keeps every message it receives.
type syslogSink struct {
	socket   string
	mu       sync.Mutex
	messages [][]byte
}

func receiveSyslog(t *testing.T) *syslogSink {
	t.Helper()
	dir, err := os.MkdirTemp("", "syslog-groundtruth-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sink := &syslogSink{socket: filepath.Join(dir, "log")}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sink.socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sink.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	go func() {
		defer close(done)
		buf := make([]byte, 1<<20)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					t.Errorf("receiving syslog messages: %v", err)
				}
				return
			}
			sink.mu.Lock()
			sink.messages = append(sink.messages, append([]byte(nil), buf[:n]...))
			sink.mu.Unlock()
		}
	}()
	return sink
}

func (s *syslogSink) reset() {
	s.mu.Lock()
	s.messages = nil
	s.mu.Unlock()
}

// sync has the server log a statement holding marker and returns the messages received
// before it: the server sends its records in the order they are logged.
func (s *syslogSink) sync(t *testing.T, server *localpg.Server, marker string) [][]byte {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, server.ConnString())
	defer conn.Close(ctx)
	for _, sql := range []string{"SET log_statement = 'all'", "SELECT '" + marker + "'"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		for i, message := range s.messages {
			if bytes.Contains(message, []byte(marker)) {
				received := s.messages[:i]
				s.mu.Unlock()
				return received
			}
		}
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no syslog message holds %s after 10s", marker)
	return nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
