package localpg

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/internal/testenv"
)

// parentDir is a directory the OS user postgres can traverse when the tests run as root
// (t.TempDir is closed to other users).
func parentDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "localpg-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("removing %s: %v", dir, err)
		}
	})
	return dir
}

func testConfig(t *testing.T, settings map[string]string) Config {
	t.Helper()
	inst, err := FindInstallation()
	if err != nil {
		testenv.Missing(t, "no local PostgreSQL, so the server tests do not run: %v", err)
	}
	return Config{Installation: inst, Dir: parentDir(t), Settings: settings}
}

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Logf("stopping the server: %v", err)
		}
	})
	return s
}

func connect(t *testing.T, s *Server) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.ConnString())
	if err != nil {
		t.Fatalf("connecting to %s: %v", s.ConnString(), err)
	}
	t.Cleanup(func() {
		if err := conn.Close(ctx); err != nil {
			t.Logf("closing the connection: %v", err)
		}
	})
	return conn
}

func show(t *testing.T, conn *pgx.Conn, setting string) string {
	t.Helper()
	var value string
	if err := conn.QueryRow(context.Background(), "SELECT current_setting($1)", setting).Scan(&value); err != nil {
		t.Fatalf("current_setting(%s): %v", setting, err)
	}
	return value
}

// syncBuffer collects the server's stderr, which arrives from another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestStartAppliesSettingsAndCapturesStderr(t *testing.T) {
	var stderr syncBuffer
	cfg := testConfig(t, map[string]string{
		"log_statement":   "all",
		"log_line_prefix": "%m [%p] it's %a ",
	})
	cfg.Stderr = &stderr
	s := startServer(t, cfg)
	conn := connect(t, s)

	for setting, want := range map[string]string{
		"log_statement":    "all",
		"log_line_prefix":  "%m [%p] it's %a ",
		"listen_addresses": "127.0.0.1",
		"port":             strconv.Itoa(s.Port()),
		"fsync":            "on",
	} {
		if got := show(t, conn, setting); got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	if s.LogDir() != "" {
		t.Errorf("LogDir = %q without the logging collector", s.LogDir())
	}
	if _, err := conn.Exec(context.Background(), "SELECT 'stderr-marker'"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the statement on stderr", func() bool {
		return strings.Contains(stderr.String(), "statement: SELECT 'stderr-marker'")
	})
}

func TestStartWithLoggingCollector(t *testing.T) {
	s := startServer(t, testConfig(t, map[string]string{
		"logging_collector": "on",
		"log_destination":   "csvlog",
		"log_statement":     "all",
	}))
	if !filepath.IsAbs(s.LogDir()) {
		t.Fatalf("LogDir = %q, want an absolute directory", s.LogDir())
	}
	if _, err := connect(t, s).Exec(context.Background(), "SELECT 'collector-marker'"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the statement in a csvlog file", func() bool {
		files, _ := filepath.Glob(filepath.Join(s.LogDir(), "*.csv"))
		for _, f := range files {
			if data, _ := os.ReadFile(f); bytes.Contains(data, []byte("collector-marker")) {
				return true
			}
		}
		return false
	})
}

func TestTwoServersAtOnce(t *testing.T) {
	first := startServer(t, testConfig(t, nil))
	second := startServer(t, testConfig(t, nil))
	if first.Port() == second.Port() {
		t.Fatalf("both servers on port %d", first.Port())
	}
	for _, s := range []*Server{first, second} {
		if got := show(t, connect(t, s), "port"); got != strconv.Itoa(s.Port()) {
			t.Errorf("server on %d reports port %s", s.Port(), got)
		}
	}
}

func TestStopRemovesEverything(t *testing.T) {
	s := startServer(t, testConfig(t, nil))
	pid := s.process.cmd.Process.Pid
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still exists after Stop: %v", s.dir, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("postmaster %d still exists after Stop: %v", pid, err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name     string
		settings map[string]string
		wantErr  string
	}{
		{
			name:     "invalid value",
			settings: map[string]string{"shared_buffers": "lots"},
			wantErr:  `invalid value for parameter "shared_buffers"`,
		},
		{
			name:     "unknown parameter",
			settings: map[string]string{"log_everything": "on"},
			wantErr:  `unrecognized configuration parameter "log_everything"`,
		},
		{name: "reserved setting", settings: map[string]string{"port": "5432"}, wantErr: "chosen by logbench"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, tt.settings)
			s, err := Start(context.Background(), cfg)
			if err == nil {
				_ = s.Stop(context.Background()) // the test fails either way
				t.Fatal("Start succeeded")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if left, _ := os.ReadDir(cfg.Dir); len(left) != 0 {
				t.Errorf("a failed Start left %v behind", left)
			}
		})
	}
}

// helperEnv makes the test binary act as a logbench that starts a server and is then
// killed, in TestServerDiesWithLogbench.
const helperEnv = "LOCALPG_TEST_HELPER_DIR"

func TestHelperServer(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestServerDiesWithLogbench")
	}
	inst, err := FindInstallation()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(context.Background(), Config{Installation: inst, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stdout.WriteString(strconv.Itoa(s.process.cmd.Process.Pid) + "\n"); err != nil {
		t.Fatal(err)
	}
	select {}
}

func TestServerDiesWithLogbench(t *testing.T) {
	cfg := testConfig(t, nil)
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperServer$")
	helper.Env = append(os.Environ(), helperEnv+"="+cfg.Dir)
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var line [32]byte
	n, _ := stdout.Read(line[:])
	pid, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err != nil {
		_ = helper.Process.Kill() // the test fails either way
		t.Fatalf("helper did not report the server's pid: %q", line[:n])
	}
	// A server that survives would hold the test's directory; never leave it running.
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL) // best effort: the server may be gone
		}
	})
	if err := helper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = helper.Wait() // reports the kill, which is the point
	eventually(t, "the server to exit after logbench was killed", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
}

// TestUnixSocketEnvConnectsThroughTheSocket: a session opened with UnixSocketEnv has no
// client address, as only a Unix socket session has; one opened with Env has the
// loopback's.
func TestUnixSocketEnvConnectsThroughTheSocket(t *testing.T) {
	s := startServer(t, testConfig(t, nil))
	ctx := context.Background()
	for name, tc := range map[string]struct {
		env         []string
		wantAddress string
	}{
		"unix socket": {s.UnixSocketEnv(), "<nil>"},
		"tcp":         {s.Env(), "127.0.0.1"},
	} {
		var keywords []string
		for _, variable := range tc.env {
			key, value, _ := strings.Cut(variable, "=")
			keywords = append(keywords, strings.ToLower(strings.TrimPrefix(key, "PG"))+"="+value)
		}
		conn, err := pgx.Connect(ctx, strings.Replace(strings.Join(keywords, " "), "database=", "dbname=", 1))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var address *string
		if err := conn.QueryRow(ctx, "SELECT host(inet_client_addr())").Scan(&address); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close(ctx)
		got := "<nil>"
		if address != nil {
			got = *address
		}
		if got != tc.wantAddress {
			t.Errorf("%s: client address %s, want %s", name, got, tc.wantAddress)
		}
	}
}
