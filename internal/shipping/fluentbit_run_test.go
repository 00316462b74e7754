package shipping

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/workload"
)

// TestFluentBitLoadsEveryGeneratedConfiguration loads each Fluent Bit configuration of
// the golden targets in the real Fluent Bit 5.0.3, which rejects unknown keys and values,
// so that a configuration it would refuse fails here and not in a user's pod.
func TestFluentBitLoadsEveryGeneratedConfiguration(t *testing.T) {
	binary := testenv.FluentBit(t)
	for name, target := range goldenTargets() {
		if target.Destination.EffectiveShipper().Kind != v1alpha1.ShipperFluentBit {
			continue
		}
		t.Run(name, func(t *testing.T) {
			config, err := Config(target)
			if err != nil {
				t.Fatal(err)
			}
			configs := [][]byte{config}
			if ForwardsSyslog(target.Destination) {
				receiver, err := SyslogReceiverConfig(target)
				if err != nil {
					t.Fatal(err)
				}
				configs = append(configs, receiver)
			}
			for _, config := range configs {
				// Fluent Bit picks the YAML format by the file's extension, as the pod's
				// config.yaml.
				path := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(path, config, 0o600); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(binary, "--dry-run", "-c", path)
				cmd.Env = append(os.Environ(), envLokiUsername+"=user", envLokiPassword+"=secret", envLokiBearerToken+"=token")
				if output, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("fluent-bit --dry-run refuses the configuration: %v\n%s\n%s", err, output, config)
				}
			}
		})
	}
}

// TestFluentBitShipsEveryRecordOfPostgreSQL runs a real PostgreSQL writing a shipping
// destination's file and the real Fluent Bit with the configuration logbench generates:
// the records the output's counter reports sent, read by the agent's scraper, are
// exactly the tagged records in the file, multi-line statements and a quoted field whose
// continuation line starts like a csvlog record included.
func TestFluentBitShipsEveryRecordOfPostgreSQL(t *testing.T) {
	for _, format := range []v1alpha1.LogFormat{v1alpha1.FormatCSVLog, v1alpha1.FormatJSONLog} {
		t.Run(string(format), func(t *testing.T) {
			target := Target{Namespace: "ns", Benchmark: "bench", Destination: v1alpha1.Destination{
				Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar,
				Shipper: &v1alpha1.ShipperSpec{Format: format, Output: v1alpha1.OutputNull}}}
			run := startFluentBitRun(t, target)
			tag := workload.NewTag(target.Destination.Name, 1, 1, "0123456789ab")
			before := run.read(t)
			written := run.writeTaggedRecords(t, tag)
			run.expectReadableByTheGroup(t)

			var shipped ShipperMetrics
			testenv.WaitFor(t, "Fluent Bit to send every record", 30*time.Second, func() error {
				shipped = run.read(t)
				if sent := shipped.Outputs[fluentBitOutput].Sent - before.Outputs[fluentBitOutput].Sent; sent != written {
					return fmt.Errorf("sent %d of %d records", sent, written)
				}
				return nil
			})
			// The input reads every record, the ones the grep filter keeps out included.
			if read := shipped.Read - before.Read; read < written {
				t.Errorf("Fluent Bit read %d records, fewer than the %d it sent", read, written)
			}
			if dropped := shipped.Total().Dropped; dropped != 0 {
				t.Errorf("Fluent Bit dropped %d records", dropped)
			}
		})
	}
}

// fluentBitRun is a local PostgreSQL writing a shipping destination's file and Fluent
// Bit shipping it with the destination's generated configuration.
type fluentBitRun struct {
	server *localpg.Server
	// format and extension are those of the file PostgreSQL writes.
	format    records.Format
	extension string
	scraper   ShipperScraper
}

// startFluentBitRun starts the server with the settings ServerSettings gives the
// destination and statement logging on, then Fluent Bit with the generated
// configuration, its pod paths moved to the test's folders.
func startFluentBitRun(t *testing.T, target Target) fluentBitRun {
	t.Helper()
	settings := ServerSettings(target.Destination)
	delete(settings, "log_directory") // localpg's own, beside the data directory
	settings["logging_collector"] = "on"
	settings["log_statement"] = "all"
	server := startLocalServer(t, settings, "")

	config, err := fluentBit{}.Config(target)
	if err != nil {
		t.Fatal(err)
	}
	scraper, _ := startFluentBitWith(t, config, []string{LogDirectory, server.LogDir()})
	run := fluentBitRun{server: server, scraper: scraper, format: records.FormatCSVLog, extension: ".csv"}
	if target.Destination.EffectiveShipper().Format == v1alpha1.FormatJSONLog {
		run.format, run.extension = records.FormatJSONLog, ".json"
	}
	return run
}

// startLocalServer starts a server of the local installation with settings, its
// syslog() reaching devLog unless that is empty.
func startLocalServer(t *testing.T, settings map[string]string, devLog string) *localpg.Server {
	t.Helper()
	inst, err := localpg.FindInstallation()
	if err != nil {
		testenv.Missing(t, "no local PostgreSQL server binaries (apt-get install postgresql): %v", err)
	}
	// The OS user postgres must traverse the server's parent directory when the tests
	// run as root, and t.TempDir is closed to other users.
	parent, err := os.MkdirTemp("", "shipping-postgresql-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	server, err := localpg.Start(context.Background(), localpg.Config{Installation: inst, Dir: parent, Settings: settings,
		DevLog: devLog})
	if err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = server.Stop(context.Background()) })
	return server
}

func (r fluentBitRun) read(t *testing.T) ShipperMetrics {
	t.Helper()
	metrics, err := r.scraper.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return metrics
}

// recordShapes are statements as PostgreSQL logs them, one record each: one line, a
// statement over several lines, and a quoted literal whose second line starts like a
// csvlog record (timestamp, quotes and commas), which only quote parity tells apart.
// Each names its session's application in a comment before the line break, as
// logbench's workloads carry the run's tag, so a record split in two would count twice.
var recordShapes = []string{
	"SELECT %d /* %s */",
	"SELECT %d /* %s */,\n  'second line'\n  AS third_line",
	"SELECT %d /* %s */, 'x\n2026-01-02 03:04:05.678 UTC,\"postgres\",\"postgres\",42,\"[local]\",1.2,3,\"SELECT\" looks like a record'",
}

// taggedStatements per shape: a few thousand records, a second or two of work.
const taggedStatements = 700

// writeTaggedRecords logs statements of every shape from a session whose
// application_name is tag, and some from a session of another name that the grep filter
// keeps out, then returns the number of tag's records in the file, counted with
// logbench's own counter once the file holds a later marker record.
func (r fluentBitRun) writeTaggedRecords(t *testing.T, tag string) int64 {
	t.Helper()
	execute := func(applicationName string, n int) {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, r.server.ConnString()+"&application_name="+applicationName)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(ctx) }()
		for i := range n {
			for _, shape := range recordShapes {
				// Exec without arguments uses the simple protocol: one statement record.
				if _, err := conn.Exec(ctx, fmt.Sprintf(shape, i, applicationName)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	execute(tag, taggedStatements)
	execute("other_application", 10)
	marker := "marker_" + strings.TrimPrefix(tag, "lb_")
	execute(marker, 1)

	want := int64(taggedStatements * len(recordShapes))
	var counted int64
	testenv.WaitFor(t, "the marker record in the log file", 10*time.Second, func() error {
		if r.countFile(t, marker) == 0 {
			return fmt.Errorf("no record of %s yet", marker)
		}
		counted = r.countFile(t, tag)
		return nil
	})
	if counted != want {
		t.Fatalf("the log file holds %d records of %s, want %d", counted, tag, want)
	}
	return counted
}

// expectReadableByTheGroup checks that PostgreSQL wrote its files readable by its group,
// as the shipper of an instance pod, another user in the postgres group, reads them.
func (r fluentBitRun) expectReadableByTheGroup(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(r.server.LogDir(), "*"+r.extension))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s file in %s: %v", r.extension, r.server.LogDir(), err)
	}
	for _, name := range files {
		info, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().Perm(); mode != 0o640 {
			t.Errorf("%s: mode %04o, want 0640", name, mode)
		}
	}
}

func (r fluentBitRun) countFile(t *testing.T, tag string) int64 {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(r.server.LogDir(), "*"+r.extension))
	if err != nil {
		t.Fatal(err)
	}
	counter := records.NewCounter(r.format, tag)
	for _, name := range files {
		file, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(counter, file)
		_ = file.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return counter.Count()
}
