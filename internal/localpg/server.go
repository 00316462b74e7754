package localpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// superuser is the role initdb creates; connections are trusted, so it needs no password.
	superuser = "postgres"
	database  = "postgres"
	loopback  = "127.0.0.1"

	// portAttempts bounds the retries when another process takes the free port between
	// the check and the server's bind.
	portAttempts = 5
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
	// errorLines of the server's output go into a start failure.
	errorLines = 20
)

// Config describes a local server.
type Config struct {
	Installation
	// Dir is the parent of the server's directory (data, socket and log directories go
	// in a new directory under it); empty means the system's temporary directory. The
	// Unix socket path must stay under 108 bytes, so keep it short.
	Dir string
	// Settings are written into postgresql.conf. port, listen_addresses and
	// unix_socket_directories are localpg's. log_directory defaults to a directory next to
	// the data directory; a relative one is relative to the data directory, as in
	// PostgreSQL. Everything else, durability included, keeps PostgreSQL's defaults unless
	// set here.
	Settings map[string]string
	// Stderr receives the server's standard error (what a container runtime would
	// capture); nil discards it. Its Write must not fail: the server's output stops with it.
	Stderr io.Writer
	// DevLog is a Unix datagram socket that the server's syslog() reaches as /dev/log;
	// empty leaves /dev/log alone. It needs root: see ErrDevLogNeedsRoot.
	DevLog string
}

// Server is a running local PostgreSQL server.
type Server struct {
	dir     string
	dataDir string
	socket  string
	logDir  string
	port    int
	process *process
	output  *tailBuffer

	stopOnce sync.Once
	stopErr  error
}

// Start creates a cluster with initdb and starts postgres on a free loopback port. It
// returns once the server accepts connections. The caller must Stop the server.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := validateSettings(cfg.Settings); err != nil {
		return nil, err
	}
	owner, err := serverOwner()
	if err != nil {
		return nil, err
	}
	if cfg.DevLog != "" && owner == nil {
		return nil, ErrDevLogNeedsRoot
	}
	dir, err := os.MkdirTemp(cfg.Dir, "logbench-pg-")
	if err != nil {
		return nil, fmt.Errorf("creating the local server's directory: %w", err)
	}
	s := &Server{
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		socket:  filepath.Join(dir, "socket"),
	}
	if err := s.start(ctx, cfg, owner); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, cfg Config, owner *syscall.Credential) error {
	settings := maps.Clone(cfg.Settings)
	if settings == nil {
		settings = map[string]string{}
	}
	if _, set := settings["log_directory"]; !set {
		settings["log_directory"] = filepath.Join(s.dir, "log")
	}
	if isOn(settings["logging_collector"]) {
		s.logDir = settings["log_directory"]
		if !filepath.IsAbs(s.logDir) {
			s.logDir = filepath.Join(s.dataDir, s.logDir)
		}
	}
	settings["listen_addresses"] = loopback
	settings["unix_socket_directories"] = s.socket

	if err := os.Mkdir(s.socket, 0o700); err != nil {
		return fmt.Errorf("creating the socket directory: %w", err)
	}
	if owner != nil {
		if err := chownTree(s.dir, owner); err != nil {
			return fmt.Errorf("handing %s to the OS user postgres: %w", s.dir, err)
		}
	}
	if err := s.initdb(cfg.Installation, owner); err != nil {
		return err
	}
	conf := filepath.Join(s.dataDir, "postgresql.conf")
	if err := appendFile(conf, "\n# Set by logbench.\n"+confLines(settings)); err != nil {
		return fmt.Errorf("writing postgresql.conf: %w", err)
	}
	for attempt := 1; ; attempt++ {
		err := s.startPostgres(ctx, cfg, owner)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == portAttempts {
			return err
		}
	}
}

func (s *Server) initdb(inst Installation, owner *syscall.Credential) error {
	// The C locale matches CloudNativePG's default and exists on every system.
	cmd := s.command(inst.Binary("initdb"), owner,
		"-D", s.dataDir, "-A", "trust", "-U", superuser, "--no-sync", "-E", "UTF8", "--locale=C")
	out, err := run(cmd)
	if err != nil {
		return fmt.Errorf("initdb failed: %w%s\n%s", err, ownerHint(owner), strings.TrimSpace(string(out)))
	}
	return nil
}

var errPortTaken = errors.New("port taken")

func (s *Server) startPostgres(ctx context.Context, cfg Config, owner *syscall.Credential) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	s.output = &tailBuffer{limit: 16 << 10}
	// The port goes on the command line, not in postgresql.conf, so a retry only changes it.
	args := []string{"-D", s.dataDir, "-p", strconv.Itoa(port)}
	cmd := s.command(cfg.Binary("postgres"), owner, args...)
	if cfg.DevLog != "" {
		if cmd, err = s.devLogCommand(cfg.DevLog, owner, cfg.Binary("postgres"), args...); err != nil {
			return err
		}
	}
	stderr := cfg.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	cmd.Stderr = io.MultiWriter(s.output, stderr)
	// Backends inherit the stderr pipe; a killed postmaster's children must not hold
	// Wait forever.
	cmd.WaitDelay = 5 * time.Second
	if s.process, err = launch(cmd); err != nil {
		return fmt.Errorf("starting postgres: %w", err)
	}
	if err := s.waitReady(ctx); err != nil {
		stopErr := s.process.shutdown(context.Background(), stopTimeout)
		if strings.Contains(s.output.lastLines(errorLines), "Address already in use") {
			return errPortTaken
		}
		startErr := fmt.Errorf("%w%s\nlast server output:\n%s", err, s.logDirHint(), s.output.lastLines(errorLines))
		return errors.Join(startErr, stopErr)
	}
	return nil
}

// waitReady connects through the server's own Unix socket, which no other server can
// answer on, until a connection succeeds, the server exits, or the time is up.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	socketConn := fmt.Sprintf("host=%s port=%d user=%s dbname=%s connect_timeout=5", s.socket, s.port, superuser, database)
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		conn, err := pgx.Connect(ctx, socketConn)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.process.done:
			return fmt.Errorf("postgres exited during startup: %v", s.process.err)
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections within %s: %w", startTimeout, ctx.Err())
		case <-ticker.C:
		}
	}
}

func (s *Server) command(binary string, owner *syscall.Credential, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	// The caller's working directory may be closed to the OS user postgres; initdb
	// resolves it at start.
	cmd.Dir = s.dir
	cmd.SysProcAttr = childAttributes(owner)
	return cmd
}

func (s *Server) logDirHint() string {
	if s.logDir == "" {
		return ""
	}
	return " (later messages are in " + s.logDir + ")"
}

func ownerHint(owner *syscall.Credential) string {
	if owner == nil {
		return ""
	}
	return fmt.Sprintf(" (it ran as the OS user postgres, uid %d, because logbench runs as root: "+
		"every parent directory of the server's directory must be searchable by that user)", owner.Uid)
}

// Env returns libpq environment variables that connect to the server.
func (s *Server) Env() []string {
	return []string{
		"PGHOST=" + loopback,
		"PGPORT=" + strconv.Itoa(s.port),
		"PGUSER=" + superuser,
		"PGDATABASE=" + database,
	}
}

// UnixSocketEnv returns libpq environment variables that connect to the server through
// its Unix socket, which costs a client on this machine less than TCP on the loopback.
func (s *Server) UnixSocketEnv() []string {
	return []string{
		"PGHOST=" + s.socket,
		"PGPORT=" + strconv.Itoa(s.port),
		"PGUSER=" + superuser,
		"PGDATABASE=" + database,
	}
}

// ConnString returns a connection URL for the server.
func (s *Server) ConnString() string {
	host := net.JoinHostPort(loopback, strconv.Itoa(s.port))
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", superuser, host, database)
}

// LogDir is the absolute directory the logging collector writes to, or "" when the
// collector is off.
func (s *Server) LogDir() string { return s.logDir }

// Port is the server's TCP port on 127.0.0.1.
// PID is the postmaster's process ID, the root of the server's processes.
func (s *Server) PID() int { return s.process.cmd.Process.Pid }

func (s *Server) Port() int { return s.port }

// Stop shuts the server down (fast shutdown, then a kill when it has not stopped within
// 30 seconds or when ctx ends) and removes its directory. Later calls return the first
// call's result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		err := s.process.shutdown(ctx, stopTimeout)
		if err != nil {
			err = fmt.Errorf("%w\nlast server output:\n%s", err, s.output.lastLines(errorLines))
		}
		s.stopErr = errors.Join(err, os.RemoveAll(s.dir))
	})
	return s.stopErr
}

// freePort asks the kernel for a free loopback port. Another process may take it before
// the server binds; Start retries then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return 0, fmt.Errorf("finding a free port on %s: %w", loopback, err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("releasing the free port %d: %w", port, err)
	}
	return port, nil
}

// isOn reads a PostgreSQL boolean as the server does (on, true, yes, 1 and unique
// prefixes of them; only the common spellings are needed here).
func isOn(value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "on", "true", "yes", "1", "t", "y":
		return true
	}
	return false
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}
