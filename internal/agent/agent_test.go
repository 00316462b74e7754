package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	localpgtest.RemoveCounterBuilds()
	os.Exit(code)
}

// TestRunCountsEveryFileDestination plays a CloudNativePG instance with a local server
// (logging collector on, statement logging from the spec as the operator sets it) and
// runs the agent for each file destination in turn, as a runner would: the agent
// switches the destination with ALTER SYSTEM, unless the server has it already, runs
// pgbench and reads the log files through SQL. Every expected record must be found, on
// the local PostgreSQL and on 18.
func TestRunCountsEveryFileDestination(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	localpgtest.Run(t, func(t *testing.T, installation localpg.Installation) {
		spec := v1alpha1.LoggingBenchmarkSpec{
			Logging: v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll, LinePrefix: "%m [%p] %q%u@%d %a "},
			Workload: v1alpha1.WorkloadSpec{Builtin: v1alpha1.WorkloadSelectOnly, QueryMode: v1alpha1.QueryPrepared,
				Scale: 1, Duration: metav1.Duration{Duration: time.Second}},
		}
		env := startInstance(t, installation, spec.ServerParameters(v1alpha1.Destination{Type: v1alpha1.DestinationCSVLog}))

		// jsonlog twice: the second run finds the server switched already.
		for i, destination := range []v1alpha1.DestinationType{v1alpha1.DestinationStderr, v1alpha1.DestinationCSVLog,
			v1alpha1.DestinationJSONLog, v1alpha1.DestinationJSONLog} {
			t.Run(fmt.Sprintf("%d-%s", i+1, destination), func(t *testing.T) {
				loaded := configurationLoadTime(t, env)
				result, err := Run(context.Background(), Request{
					Benchmark:    "test",
					Destination:  v1alpha1.Destination{Name: strings.ToLower(string(destination)), Type: destination},
					Logging:      spec.Logging,
					Workload:     spec.Workload,
					Clients:      2,
					Repeat:       1,
					DrainTimeout: metav1.Duration{Duration: 10 * time.Second},
				}, env)
				if err != nil {
					t.Fatal(err)
				}
				records := result.Records
				if result.TPS <= 0 || result.Transactions <= 0 || records.Expected != result.Transactions {
					t.Errorf("result %+v: want TPS > 0 and one record per select-only transaction", result)
				}
				if records.Dropped == nil || *records.Dropped != 0 || records.Delivered != records.Expected {
					t.Errorf("records %+v, want all %d delivered", records, records.Expected)
				}
				if reloaded := configurationLoadTime(t, env) != loaded; reloaded != (i < 3) {
					t.Errorf("the run reloaded the configuration: %t, want %t (only when the destination changes)", reloaded, i < 3)
				}
			})
		}
		if _, err := os.Stat(env.LogDirectory); err != nil {
			t.Errorf("the file destinations did not write to %s: %v", env.LogDirectory, err)
		}
	})
}

// configurationLoadTime is when the server last loaded its configuration.
func configurationLoadTime(t *testing.T, env Environment) time.Time {
	t.Helper()
	conn, err := env.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var loaded time.Time
	if err := conn.QueryRow(context.Background(), "SELECT pg_conf_load_time()").Scan(&loaded); err != nil {
		t.Fatal(err)
	}
	return loaded
}

// midRecordDirectory lists the csvlog file, the first time, as ending just after the
// first line of a record with a quoted newline: where the logging collector, writing
// line by line, may leave it when the destination looks.
type midRecordDirectory struct {
	serverDirectory
	cut    int64
	listed bool
}

func (d *midRecordDirectory) List(ctx context.Context) ([]bench.LogFile, error) {
	files, err := d.serverDirectory.List(ctx)
	if err != nil || d.listed {
		return files, err
	}
	d.listed = true
	for i := range files {
		if strings.HasSuffix(files[i].Name, ".csv") {
			files[i].Size = d.cut
		}
	}
	return files, nil
}

// TestFileCountStartsAtARecordBoundaryOverSQL reads a real server's csvlog over SQL, as
// the agent does in a cluster, from a listing that ends inside a multi-line record.
func TestFileCountStartsAtARecordBoundaryOverSQL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	installation := localpgtest.Local(t)
	ctx := context.Background()
	server, err := localpg.Start(ctx, localpg.Config{Installation: installation, Settings: map[string]string{
		"logging_collector": "on", "log_destination": "csvlog", "log_statement": "all"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Stop(context.Background()); err != nil {
			t.Logf("stopping PostgreSQL: %v", err)
		}
	})
	conn, err := pgx.Connect(ctx, server.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	const before = "SELECT 'first line',\n  'second \"line\"'"
	if _, err := conn.Exec(ctx, before); err != nil {
		t.Fatal(err)
	}
	dir := &midRecordDirectory{serverDirectory: serverDirectory{conn: conn, path: server.LogDir()}}
	dir.cut = offsetInLog(t, dir.serverDirectory, "'first line',\n") + int64(len("'first line',\n"))

	const tag = "lb_csvlog_c1_r1_000000000000"
	dest, err := bench.NewFileDestination(ctx, dir, bench.RaiseLogWith(conn), records.FormatCSVLog, tag)
	if err != nil {
		t.Fatal(err)
	}
	run, err := pgx.Connect(ctx, server.ConnString()+"&application_name="+tag)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close(ctx)
	const statements = 100
	for i := range statements {
		statement := "SELECT 1"
		if i%10 == 0 {
			statement = "SELECT '\"quoted\"',\n  'on two lines'"
		}
		if _, err := run.Exec(ctx, statement); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := dest.Delivered(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got == statements {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counted %d records of the run, want %d", got, statements)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// offsetInLog waits until text is in the server's csvlog file and returns its offset.
func offsetInLog(t *testing.T, dir serverDirectory, text string) int64 {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		files, err := dir.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if !strings.HasSuffix(f.Name, ".csv") {
				continue
			}
			content, err := dir.ReadAt(ctx, f.Name, 0, int(f.Size))
			if err != nil {
				t.Fatal(err)
			}
			if at := strings.Index(string(content), text); at >= 0 {
				return int64(at)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q did not reach the csvlog within 10s", text)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunCountsAtTheSourceFromAnExtensionImage plays a CloudNativePG instance on
// PostgreSQL 18 with logbench_counter mounted as an image volume extension: its library in
// <image>/lib and its control file and script in <image>/share/extension, on
// dynamic_library_path and extension_control_path as CloudNativePG sets them. With
// spec.postgres.counter the agent creates the extension and a sampled run's expected
// records are the server's count, all of them delivered to the csvlog file.
func TestRunCountsAtTheSourceFromAnExtensionImage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	installation := localpgtest.PostgreSQL18(t)
	library := localpgtest.CounterLibrary(t, installation)
	image := extensionImageLayout(t, library)
	zero, tenth := int32(0), 0.1
	logging := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone, LinePrefix: "%m [%p] %q%u@%d %a ",
		MinDurationSample: &zero, StatementSampleRate: &tenth}
	workload := v1alpha1.WorkloadSpec{Builtin: v1alpha1.WorkloadSelectOnly, QueryMode: v1alpha1.QueryPrepared,
		Scale: 1, Duration: metav1.Duration{Duration: time.Second}}
	dest := v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}
	spec := v1alpha1.LoggingBenchmarkSpec{Logging: logging}
	settings := spec.ServerParameters(dest)
	settings["shared_preload_libraries"] = v1alpha1.CounterExtension
	settings["dynamic_library_path"] = "$libdir:" + filepath.Join(image, "lib")
	settings["extension_control_path"] = "$system:" + filepath.Join(image, "share")
	env := startInstance(t, installation, settings)
	result, err := Run(context.Background(), Request{
		Benchmark: "test", Destination: dest, Logging: logging, Workload: workload, Clients: 1, Repeat: 1,
		DrainTimeout: metav1.Duration{Duration: 10 * time.Second},
		Counter:      &v1alpha1.CounterSpec{Source: v1alpha1.CounterInExtensionImage, ExtensionImage: "counter:18"},
	}, env)
	if err != nil {
		t.Fatal(err)
	}
	counted := result.Records
	if counted.ExpectedSource != v1alpha1.ExpectedCounted || counted.Expected <= 0 ||
		counted.Expected >= result.Transactions {
		t.Errorf("records %+v of %d transactions: want a sample of them counted at the source", counted,
			result.Transactions)
	}
	if counted.Dropped == nil || *counted.Dropped != 0 || counted.Delivered != counted.Expected {
		t.Errorf("records %+v, want all %d delivered", counted, counted.Expected)
	}
}

// startInstance plays a CloudNativePG instance: a local server with the settings and
// its logging collector on unless they say otherwise, stopped when the test ends, which
// libpq's PG* variables describe, as in an agent's pod.
func startInstance(t *testing.T, installation localpg.Installation, settings map[string]string) Environment {
	t.Helper()
	if _, set := settings["logging_collector"]; !set {
		settings["logging_collector"] = "on"
	}
	// Under root the server runs as the postgres user, who cannot enter t.TempDir().
	server, err := localpg.Start(context.Background(), localpg.Config{Installation: installation, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := server.Stop(context.Background()); err != nil {
			t.Logf("stopping PostgreSQL: %v", err)
		}
	})
	for _, variable := range server.Env() {
		name, value, _ := strings.Cut(variable, "=")
		t.Setenv(name, value)
	}
	return Environment{
		Connect:      func(ctx context.Context) (*pgx.Conn, error) { return pgx.Connect(ctx, server.ConnString()) },
		Pgbench:      installation.Binary("pgbench"),
		ScratchDir:   t.TempDir(),
		LogDirectory: filepath.Join(server.LogDir(), "destination"),
	}
}

// extensionImageLayout lays the counter's files out as an extension image holds them,
// in a directory the server (the OS user postgres when the tests run as root) can read.
func extensionImageLayout(t *testing.T, library string) string {
	t.Helper()
	root := testenv.Root(t)
	image, err := os.MkdirTemp("", "logbench-counter-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(image) })
	files := map[string]string{
		filepath.Join(root, "logbench_counter", "logbench_counter.control"):                "share/extension",
		filepath.Join(root, "logbench_counter", "countersql", "logbench_counter--1.0.sql"): "share/extension",
		library + ".so": "lib",
	}
	for from, dir := range files {
		content, err := os.ReadFile(from)
		if err == nil {
			err = os.MkdirAll(filepath.Join(image, dir), 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(image, dir, filepath.Base(from)), content, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(image, 0o755); err != nil {
		t.Fatal(err)
	}
	return image
}
