package shipping

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/testenv"
)

func rsyslogTarget(s *v1alpha1.SyslogSpec) Target {
	return Target{Namespace: "ns", Benchmark: "bench", Cluster: "bench-rsyslog", Destination: v1alpha1.Destination{
		Name: "rsyslog", Type: v1alpha1.DestinationSyslog, Syslog: s,
	}}
}

var rateLimited = &v1alpha1.SyslogSpec{
	Receiver: v1alpha1.SyslogRsyslog, Facility: "LOCAL3",
	RateLimit: &v1alpha1.SyslogRateLimit{IntervalSeconds: 5, Burst: 200},
}

func TestRsyslogConfig(t *testing.T) {
	for _, tt := range []struct {
		name      string
		syslog    *v1alpha1.SyslogSpec
		want      []string
		wantNever []string
	}{
		{
			name:   "rsyslog's defaults",
			syslog: &v1alpha1.SyslogSpec{Receiver: v1alpha1.SyslogRsyslog},
			want: []string{
				`module(load="imuxsock" SysSock.Name="/logbench-syslog/log")`,
				`local0.* action(type="omfile" file="/logbench-syslog/rsyslog/messages" template="logbench_message" ` +
					`fileCreateMode="0640" dirCreateMode="0755")`,
				`syslog.* action(type="omfile" file="/logbench-syslog/rsyslog-notices.log" fileCreateMode="0640"`,
			},
			wantNever: []string{"RateLimit", `load="imklog"`},
		},
		{
			name:   "rate limited, another facility",
			syslog: rateLimited,
			want: []string{
				`SysSock.Name="/logbench-syslog/log" SysSock.RateLimit.Interval="5" SysSock.RateLimit.Burst="200")`,
				`local3.* action(type="omfile" file="/logbench-syslog/rsyslog/messages"`,
			},
			wantNever: []string{"local0"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			config, err := Config(rsyslogTarget(tt.syslog))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tt.want {
				if !bytes.Contains(config, []byte(want)) {
					t.Errorf("config lacks %s:\n%s", want, config)
				}
			}
			for _, never := range tt.wantNever {
				if bytes.Contains(config, []byte(never)) {
					t.Errorf("config holds %s:\n%s", never, config)
				}
			}
		})
	}
}

// TestRsyslogdLoadsTheConfig checks each configuration with rsyslogd's own check.
func TestRsyslogdLoadsTheConfig(t *testing.T) {
	rsyslogd := testenv.Rsyslogd(t)
	for _, s := range []*v1alpha1.SyslogSpec{{Receiver: v1alpha1.SyslogRsyslog}, rateLimited} {
		file := filepath.Join(t.TempDir(), "rsyslog.conf")
		config, err := Config(rsyslogTarget(s))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, config, 0o600); err != nil {
			t.Fatal(err)
		}
		if output, err := exec.Command(rsyslogd, "-N1", "-f", file).CombinedOutput(); err != nil ||
			bytes.Contains(bytes.ToLower(output), []byte("error")) {
			t.Errorf("rsyslogd -N1: %v\n%s\n%s", err, output, config)
		}
	}
}

// TestRsyslogdKeepsWhatItsRateLimitLets runs rsyslogd with the configuration logbench
// generates and sends it one process's PostgreSQL-shaped messages: without rateLimit
// it writes every one, with it the burst of the first interval, and the records
// counted in its file say so exactly.
func TestRsyslogdKeepsWhatItsRateLimitLets(t *testing.T) {
	rsyslogd := testenv.Rsyslogd(t)
	const sent, tag = 1000, "logbench-rsyslog-test"
	for _, tt := range []struct {
		name string
		// limit's interval outlasts the test: one window.
		limit *v1alpha1.SyslogRateLimit
		want  int64
	}{
		{name: "rsyslog's defaults keep every message", want: sent},
		{name: "rate limited", limit: &v1alpha1.SyslogRateLimit{IntervalSeconds: 600, Burst: 100}, want: 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A short path: a Unix socket's is limited to 108 bytes.
			volume, err := os.MkdirTemp("", "rsyslog")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(volume) })
			s := &v1alpha1.SyslogSpec{Receiver: v1alpha1.SyslogRsyslog, RateLimit: tt.limit}
			file := filepath.Join(volume, "rsyslog.conf")
			if err := os.WriteFile(file, rsyslogConfigIn(rsyslogTarget(s), volume), 0o600); err != nil {
				t.Fatal(err)
			}
			startRsyslogd(t, rsyslogd, file)
			socket := filepath.Join(volume, syslogSocket)
			testenv.WaitFor(t, "rsyslogd's socket", 10*time.Second, func() error {
				_, err := os.Stat(socket)
				return err
			})
			conn, err := net.Dial("unixgram", socket)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			now := time.Now().Format(time.Stamp)
			for i := 1; i <= sent; i++ {
				// As PostgreSQL sends a one-line record split into lines, local0.info.
				message := fmt.Sprintf("<134>%s postgres[4242]: [%d-1] LOG:  statement: SELECT 1; -- %s", now, i, tag)
				if _, err := conn.Write([]byte(message)); err != nil {
					t.Fatal(err)
				}
			}
			messages := filepath.Join(volume, rsyslogDirectory, rsyslogFile)
			settings := records.SyslogSettings{SequenceNumbers: true, SplitMessages: true}
			count := func() int64 {
				counter := records.NewSyslogLineCounter(settings, tag)
				text, _ := os.ReadFile(messages)
				_, _ = counter.Write(text)
				return counter.Count()
			}
			testenv.WaitFor(t, fmt.Sprintf("%d records in %s", tt.want, messages), 20*time.Second, func() error {
				if got := count(); got != tt.want {
					return fmt.Errorf("%d records", got)
				}
				return nil
			})
			// What rsyslog drops it drops at once: nothing more arrives.
			time.Sleep(time.Second)
			if got := count(); got != tt.want {
				t.Errorf("%d records in rsyslog's file, want %d", got, tt.want)
			}
			// The postgres user, in the files' group, reads them through the server.
			for path, want := range map[string]os.FileMode{
				filepath.Dir(messages): os.ModeDir | 0o755, messages: 0o640,
			} {
				if info, err := os.Stat(path); err != nil || info.Mode() != want {
					t.Errorf("%s: %v, %v; want mode %v", path, info.Mode(), err, want)
				}
			}
			notices, _ := os.ReadFile(filepath.Join(volume, rsyslogNotices))
			if dropping := strings.Contains(string(notices), "rate-limiting"); dropping != (tt.limit != nil) {
				t.Errorf("rsyslog's notices say it drops %t, want %t:\n%s", dropping, tt.limit != nil, notices)
			}
		})
	}
}

// startRsyslogd runs rsyslogd with the configuration file until the test ends, and stops
// it with SIGTERM, its signal to end.
func startRsyslogd(t *testing.T, rsyslogd, file string) {
	t.Helper()
	var output bytes.Buffer
	cmd := exec.Command(rsyslogd, "-n", "-i", "NONE", "-f", file)
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("rsyslogd's output:\n%s", output.String())
		}
	})
}

// TestRsyslogImage: a destination's own image wins over the operator's, which wins over
// the pinned one.
func TestRsyslogImage(t *testing.T) {
	const own, operators = "registry.example/own:1", "registry.example/operators:1"
	for _, tt := range []struct{ shipperImage, operatorsImage, want string }{
		{"", "", RsyslogImage},
		{"", operators, operators},
		{own, operators, own},
	} {
		target := rsyslogTarget(&v1alpha1.SyslogSpec{Receiver: v1alpha1.SyslogRsyslog})
		target.Destination.Shipper = &v1alpha1.ShipperSpec{Image: tt.shipperImage}
		target.RsyslogImage = tt.operatorsImage
		if got := target.Image(); got != tt.want {
			t.Errorf("shipper.image %q, operator's %q: image %s, want %s", tt.shipperImage, tt.operatorsImage, got, tt.want)
		}
	}
}
