package shipping

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/workload"
)

// TestFluentBitReceivesEveryRecordOfPostgreSQLsSyslog runs the real Fluent Bit with the
// receiver configuration logbench generates for a Syslog destination and a real
// PostgreSQL whose syslog() reaches Fluent Bit's socket as /dev/log (in a mount
// namespace of its own, as root): the records the output's counter reports sent are
// exactly the run's, one per record however many messages PostgreSQL split it into
// (multi-line statements, statements longer than 900 bytes), split or not.
func TestFluentBitReceivesEveryRecordOfPostgreSQLsSyslog(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "%v", localpg.ErrDevLogNeedsRoot)
	}
	for name, syslog := range map[string]*v1alpha1.SyslogSpec{
		"split":   nil,
		"unsplit": {SplitMessages: new(false), SequenceNumbers: new(false)},
	} {
		t.Run(name, func(t *testing.T) {
			target := Target{Namespace: "ns", Benchmark: "bench", Destination: v1alpha1.Destination{
				Name: "sys", Type: v1alpha1.DestinationSyslog, Syslog: syslog}}
			scraper, socket := startFluentBitReceiver(t, target)
			server := startSyslogServer(t, target.Destination, socket)
			tag := workload.NewTag(target.Destination.Name, 1, 1, "0123456789ab")
			before, err := scraper.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// A record whose second line holds the tag again counts once.
			statements := append(slices.Clone(recordShapes), "SELECT %d /* %s */, '"+strings.Repeat("long ", 400)+"'",
				"SELECT %d /* %[2]s */,\n  '%[2]s again'")
			execute := func(applicationName string, n int) {
				ctx := context.Background()
				conn, err := pgx.Connect(ctx, server.ConnString()+"&application_name="+applicationName)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = conn.Close(ctx) }()
				for i := range n {
					for _, shape := range statements {
						if _, err := conn.Exec(ctx, fmt.Sprintf(shape, i, applicationName)); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			const n = 300
			execute(tag, n)
			execute("other_application", 10)
			want := int64(n * len(statements))
			var sent int64
			testenv.WaitFor(t, "Fluent Bit to send every record", 30*time.Second, func() error {
				now, err := scraper.Read(context.Background())
				if err != nil {
					return err
				}
				if sent = now.Outputs[fluentBitOutput].Sent - before.Outputs[fluentBitOutput].Sent; sent < want {
					return fmt.Errorf("sent %d of %d records", sent, want)
				}
				return nil
			})
			// Flushes come every second: one more shows a count that went on growing.
			time.Sleep(2 * time.Second)
			after, err := scraper.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sent = after.Outputs[fluentBitOutput].Sent - before.Outputs[fluentBitOutput].Sent; sent != want {
				t.Errorf("Fluent Bit sent %d records of %s, want %d", sent, tag, want)
			}
		})
	}
}

// startFluentBitReceiver starts Fluent Bit with the target's generated configuration,
// its pod paths moved to the test's folders, and returns its scraper and socket.
func startFluentBitReceiver(t *testing.T, target Target) (ShipperScraper, string) {
	t.Helper()
	config, err := fluentBit{}.Config(target)
	if err != nil {
		t.Fatal(err)
	}
	return startFluentBitWith(t, config, nil)
}

// startFluentBitWith starts Fluent Bit with config, its pod paths moved to the test's
// folders and its other strings replaced as replace says, and returns its scraper and
// the socket of a syslog input.
func startFluentBitWith(t *testing.T, config []byte, replace []string) (ShipperScraper, string) {
	t.Helper()
	binary := testenv.FluentBit(t)
	state := t.TempDir()
	sockets, err := os.MkdirTemp("", "syslog-receiver-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(sockets) })
	port := testenv.FreePort(t)
	local := strings.NewReplacer(append([]string{
		syslogMountPath, sockets,
		bufferMountPath, state,
		fmt.Sprintf("http_port: %d", fluentBitMetricsPort), fmt.Sprintf("http_port: %d", port),
		// In the pod Fluent Bit runs in PostgreSQL's group; here as root beside postgres.
		`unix_perm: "0660"`, `unix_perm: "0666"`,
	}, replace...)...).Replace(string(config))
	path := filepath.Join(state, "config.yaml")
	if err := os.WriteFile(path, []byte(local), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.StartProcess(t, binary, "-c", path)
	scraper := ShipperScraper{URL: fmt.Sprintf("http://127.0.0.1:%d%s", port, fluentBitMetricsPath), Kind: v1alpha1.ShipperFluentBit}
	testenv.WaitFor(t, "Fluent Bit's metrics endpoint", 30*time.Second, func() error {
		_, err := scraper.Read(context.Background())
		return err
	})
	socket := filepath.Join(sockets, syslogSocket)
	// The startup probe of the pod relies on this: the socket exists once the HTTP
	// server answers.
	if strings.Contains(local, "unix_udp") {
		if info, err := os.Stat(socket); err != nil || info.Mode()&os.ModeSocket == 0 {
			t.Fatalf("Fluent Bit answers on its HTTP port but %s is no socket: %v", socket, err)
		}
	}
	return scraper, socket
}

// startSyslogServer starts a local server logging every statement with syslog() as the
// destination configures it, its /dev/log being socket.
func startSyslogServer(t *testing.T, d v1alpha1.Destination, socket string) *localpg.Server {
	t.Helper()
	settings := d.EffectiveSyslog().Settings()
	maps.Copy(settings, map[string]string{"log_destination": "syslog", "log_statement": "all",
		"log_line_prefix": "%m [%p] %q%u@%d %a "})
	return startLocalServer(t, settings, socket)
}

// TestFluentBitForwardsSyslogToTheReceiver runs the sidecar of a forwarding Syslog
// destination and the receiver it forwards to, both the real Fluent Bit with the
// configurations logbench generates, on this machine: every record the sidecar keeps
// arrives at the receiver over TCP; over UDP what arrives is counted, never more than was
// sent.
func TestFluentBitForwardsSyslogToTheReceiver(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Missing(t, "%v", localpg.ErrDevLogNeedsRoot)
	}
	for _, transport := range []v1alpha1.SyslogTransport{v1alpha1.SyslogTCP, v1alpha1.SyslogUDP} {
		t.Run(string(transport), func(t *testing.T) {
			target := Target{Namespace: "ns", Benchmark: "bench", Destination: v1alpha1.Destination{
				Name: "sys", Type: v1alpha1.DestinationSyslog, Syslog: &v1alpha1.SyslogSpec{Transport: transport}}}
			sidecarConfig, receiverConfig, err := syslogForwardingConfigs(target, "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			port := fmt.Sprint(testenv.FreePort(t))
			listen := []string{fmt.Sprintf("port: %d", syslogReceiverPort), "port: " + port}
			receiver, _ := startFluentBitWith(t, receiverConfig, listen)
			sidecar, socket := startFluentBitWith(t, sidecarConfig, listen)
			server := startSyslogServer(t, target.Destination, socket)
			tag := workload.NewTag(target.Destination.Name, 1, 1, "0123456789ab")
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, server.ConnString()+"&application_name="+tag)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close(ctx) }()
			const want = 500
			for i := range want {
				if _, err := conn.Exec(ctx, fmt.Sprintf("SELECT %d /* %s */,\n  'second line'", i, tag)); err != nil {
					t.Fatal(err)
				}
			}
			sent := waitForSent(t, sidecar, "the sidecar", want)
			if transport == v1alpha1.SyslogTCP {
				waitForSent(t, receiver, "the receiver", sent)
			} else {
				// UDP loses what the receiver's socket buffer cannot hold: the sidecar flushes a
				// second of records at once. The receiver counts what arrived, never more.
				time.Sleep(3 * time.Second)
			}
			// The fresh processes' counters are the run's: the stages the agent reports.
			forwarded, err := sidecar.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			arrived, err := receiver.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := arrived.Outputs[fluentBitOutput].Sent
			t.Logf("over %s the receiver got %d of the %d records the sidecar sent", transport, got, sent)
			if got == 0 || got > sent {
				t.Errorf("the receiver got %d of %d records over %s", got, sent, transport)
			}
			stages := ForwardedStages(forwarded, arrived, nil)
			stages.LostAt = stages.LosingStage(new(int64(want)))
			wantLost := map[bool]string{true: "received", false: ""}[got < want]
			if *stages.Read != want || *stages.Forwarded != want || *stages.Received != got || stages.LostAt != wantLost {
				t.Errorf("stages read %d, forwarded %d, received %d, lost at %q; want %d, %d, %d, %q", *stages.Read,
					*stages.Forwarded, *stages.Received, stages.LostAt, want, want, got, wantLost)
			}
		})
	}
}

// waitForSent waits until the output of the Fluent Bit that scraper reads has sent want
// records, and returns them.
func waitForSent(t *testing.T, scraper ShipperScraper, name string, want int64) int64 {
	t.Helper()
	testenv.WaitFor(t, name+" to send every record", 30*time.Second, func() error {
		metrics, err := scraper.Read(context.Background())
		if err != nil {
			return err
		}
		if sent := metrics.Outputs[fluentBitOutput].Sent; sent != want {
			return fmt.Errorf("%s sent %d of %d records (read %d, filtered %d)", name, sent, want, metrics.Read, metrics.Filtered)
		}
		return nil
	})
	return want
}
