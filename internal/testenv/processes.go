package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// FluentBitEnv names the Fluent Bit binary the tests run; without it they run the build
// in shared/ beside the repository of the release hack/versions.env pins, checked against
// the sha256 pinned with it.
const FluentBitEnv = "LOGBENCH_FLUENT_BIT"

// FluentBit returns the Fluent Bit binary the tests run. When there is none, the test
// fails in CI and is skipped, saying why, elsewhere.
func FluentBit(t testing.TB) string {
	t.Helper()
	version := PinnedVersion(t, "FLUENT_BIT_VERSION")
	path := os.Getenv(FluentBitEnv)
	shared := path == ""
	if shared {
		path = filepath.Join(Root(t), "..", "shared", "tools", "fluent-bit-"+version, "fluent-bit")
	}
	if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		Missing(t, "Fluent Bit not found at %s (set %s to a Fluent Bit %s binary): %v", path, FluentBitEnv, version, err)
	}
	if shared {
		if sum, want := FileSHA256(t, path), PinnedVersion(t, "FLUENT_BIT_SHA256"); sum != want {
			t.Fatalf("%s has sha256 %s, hack/versions.env pins %s", path, sum, want)
		}
	}
	return path
}

// FileSHA256 returns the hex sha256 of the file at path.
func FileSHA256(t testing.TB, path string) string {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = file.Close() }()
	hash := sha256.New()
	if _, err := io.Copy(hash, file); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(hash.Sum(nil))
}

// RsyslogdEnv names the rsyslogd the tests run; without it they run the one on the PATH
// or at Debian's /usr/sbin/rsyslogd (the package rsyslog).
const RsyslogdEnv = "LOGBENCH_RSYSLOGD"

// Rsyslogd returns the rsyslogd the tests run. When there is none, the test fails in CI
// and is skipped, saying why, elsewhere.
func Rsyslogd(t testing.TB) string {
	t.Helper()
	if path := os.Getenv(RsyslogdEnv); path != "" {
		return path
	}
	for _, path := range []string{"rsyslogd", "/usr/sbin/rsyslogd"} {
		if found, err := exec.LookPath(path); err == nil {
			return found
		}
	}
	Missing(t, "rsyslogd not found on the PATH nor at /usr/sbin/rsyslogd (apt-get install rsyslog, or set %s)",
		RsyslogdEnv)
	return ""
}

// Missing reports a tool or service a test needs and cannot find: a failure in CI
// (CI=true), where every test must run, and a skip with the reason elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// StartProcess runs binary with args until the test ends, its output in a file that
// the log shows when the test fails, and stops it (interrupt, then kill) at cleanup.
func StartProcess(t testing.TB, binary string, args ...string) {
	t.Helper()
	name := filepath.Base(binary)
	output, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = output, output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// An interrupted process's exit status says nothing; one that hangs is killed.
		_ = cmd.Process.Signal(os.Interrupt)
		kill := time.AfterFunc(10*time.Second, func() { _ = cmd.Process.Kill() })
		_ = cmd.Wait()
		kill.Stop()
		_ = output.Close()
		if t.Failed() {
			if text, err := os.ReadFile(output.Name()); err == nil {
				t.Logf("%s output:\n%s", name, tail(string(text), 4000))
			}
		}
	})
}

// WaitFor retries check every 200 ms until it succeeds, failing the test after timeout.
func WaitFor(t testing.TB, what string, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port
}

// HTTPOK checks that a GET of endpoint answers 200 within 2 s.
func HTTPOK(endpoint string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return err
	}
	response, err := http.DefaultClient.Do(request)
	if err != nil {
		return err
	}
	_ = response.Body.Close()
	if response.StatusCode != http.StatusOK {
		return errors.New(response.Status)
	}
	return nil
}

// lokiConfig is a minimal single-binary Loki: no auth (tenant "fake"), everything on
// loopback, TSDB index and chunks on the local filesystem, rings in memory. %[1]s is the
// data folder, %[2]d and %[3]d the HTTP and gRPC ports, %[4]s the limits_config lines.
const lokiConfig = `auth_enabled: false
server:
  http_listen_address: 127.0.0.1
  http_listen_port: %[2]d
  grpc_listen_address: 127.0.0.1
  grpc_listen_port: %[3]d
  log_level: warn
common:
  instance_addr: 127.0.0.1
  path_prefix: %[1]s
  storage:
    filesystem:
      chunks_directory: %[1]s/chunks
      rules_directory: %[1]s/rules
  replication_factor: 1
  ring:
    kvstore:
      store: inmemory
# The ingester waits 15 s after joining its ring before /ready says so; a single
# instance has nobody to wait for.
ingester:
  lifecycler:
    min_ready_duration: 0s
schema_config:
  configs:
    - from: 2020-10-24
      store: tsdb
      object_store: filesystem
      schema: v13
      index:
        prefix: index_
        period: 24h
limits_config:
  allow_structured_metadata: true
%[4]s
analytics:
  reporting_enabled: false
`

// StartLoki runs the project's Loki (bin/loki, make loki) with the given limits_config
// lines until the test ends, waits until it is ready and returns its URL.
func StartLoki(t testing.TB, limits string) string {
	t.Helper()
	binary := ProjectBinary(t, "loki", "make loki")
	dir := t.TempDir()
	httpPort, grpcPort := FreePort(t), FreePort(t)
	config := filepath.Join(dir, "loki.yaml")
	content := fmt.Sprintf(lokiConfig, filepath.Join(dir, "data"), httpPort, grpcPort, limits)
	if err := os.WriteFile(config, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	StartProcess(t, binary, "-config.file="+config, "-target=all")
	WaitFor(t, "Loki to become ready", 90*time.Second, func() error {
		return HTTPOK(base + "/ready")
	})
	return base
}

// ProjectBinary returns bin/NAME of the repository, which the make target build makes;
// a missing one is reported with Missing.
func ProjectBinary(t testing.TB, name, build string) string {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(root, "bin", name)
	if _, err := os.Stat(binary); err != nil {
		Missing(t, "%s not found: run %s (%v)", binary, build, err)
	}
	return binary
}

func tail(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return "..." + text[len(text)-n:]
}
