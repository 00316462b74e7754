package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a child that dies with logbench: see childAttributes.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // the result of cmd.Wait, set before done is closed
}

// launch starts cmd from a goroutine that stays locked to its OS thread for the child's
// whole life. On Linux the parent-death signal fires when the thread that forked the
// child exits, not the process, and the Go runtime may retire an idle thread at any time;
// a locked goroutine that never unlocks keeps its thread until the goroutine ends, which
// it does only after the child has exited.
func launch(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// run executes cmd to completion and returns its combined output.
func run(cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	p, err := launch(cmd)
	if err != nil {
		return nil, err
	}
	<-p.done
	return out.Bytes(), p.err
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// shutdown asks for PostgreSQL's fast shutdown (SIGINT: sessions are disconnected, a
// clean checkpoint is written) and kills the process when it has not exited by the
// timeout or when ctx ends.
func (p *process) shutdown(ctx context.Context, timeout time.Duration) error {
	if p.exited() {
		if p.err != nil {
			return fmt.Errorf("the server had already stopped: %w", p.err)
		}
		return nil
	}
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling the server: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing the server: %w", err)
	}
	<-p.done
	return fmt.Errorf("the server did not shut down within %s and was killed", timeout)
}

// serverOwner returns the credentials initdb and postgres run with: nil (the current
// user) normally, the OS user "postgres" when logbench runs as root, because PostgreSQL
// refuses to run as root.
func serverOwner() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("logbench runs as root, and PostgreSQL refuses to run as root, "+
			"so the local server runs as the OS user \"postgres\", which cannot be found (%w): "+
			"install the postgresql package, which creates it, or run logbench as an ordinary user", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("OS user postgres has a non-numeric uid %q", u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("OS user postgres has a non-numeric gid %q", u.Gid)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// chownTree hands dir and everything in it to owner.
func chownTree(dir string, owner *syscall.Credential) error {
	return filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(owner.Uid), int(owner.Gid))
	})
}

// tailBuffer keeps the last bytes written to it, for error messages about a server that
// may write without bound. It is safe for concurrent use.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	limit int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if excess := len(t.buf) - t.limit; excess > 0 {
		t.buf = append(t.buf[:0], t.buf[excess:]...)
	}
	return len(p), nil
}

// lastLines returns up to n of the last complete or partial lines written.
func (t *tailBuffer) lastLines(n int) string {
	t.mu.Lock()
	text := strings.TrimRight(string(t.buf), "\n")
	t.mu.Unlock()
	lines := strings.Split(text, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
