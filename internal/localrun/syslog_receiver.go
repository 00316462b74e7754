package localrun

// The syslog receiver on this machine: a Unix datagram socket that a server's syslog()
// reaches as /dev/log, and the file it writes the messages to, one a line, for the
// records to be counted there.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/logbench/logbench/internal/records"
)

const (
	// syslogMaxMessage is the largest message read whole: glibc sends a record PostgreSQL does
	// not split in one datagram, which the socket's send buffer bounds (about 200 KiB by
	// default on Linux).
	syslogMaxMessage = 1 << 20
	// syslogReceiveBuffer is asked of the kernel so that bursts wait in the socket rather than
	// in the senders: a full Unix datagram socket blocks syslog() in the backends.
	syslogReceiveBuffer = 8 << 20
	// syslogQueued bounds the messages read but not yet written.
	syslogQueued = 4096
)

// syslogReceiver receives messages on a Unix datagram socket and appends them to a file with
// records.SyslogLine.
type syslogReceiver struct {
	conn      *net.UnixConn
	file      *os.File
	socket    string
	messages  chan []byte
	written   chan error
	truncated atomic.Int64
	received  atomic.Int64
	readErr   error
	readDone  chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// listenSyslog creates the socket at socketPath, open to every user (the server runs as
// another one), and starts writing what it receives to file.
func listenSyslog(socketPath, file string) (*syslogReceiver, error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: socketPath, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", socketPath, err)
	}
	// Best effort: the kernel caps it at net.core.rmem_max.
	_ = conn.SetReadBuffer(syslogReceiveBuffer)
	if err := os.Chmod(socketPath, 0o666); err != nil {
		return nil, errors.Join(fmt.Errorf("opening %s to the server: %w", socketPath, err), conn.Close())
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, errors.Join(err, conn.Close())
	}
	r := &syslogReceiver{
		conn: conn, file: f, socket: socketPath,
		messages: make(chan []byte, syslogQueued), written: make(chan error, 1), readDone: make(chan struct{}),
	}
	go r.read()
	go r.write()
	return r, nil
}

// read takes every datagram until the socket is closed.
func (r *syslogReceiver) read() {
	defer close(r.readDone)
	defer close(r.messages)
	buf := make([]byte, syslogMaxMessage)
	for {
		n, _, flags, _, err := r.conn.ReadMsgUnix(buf, nil)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.readErr = err
			}
			return
		}
		r.received.Add(1)
		if flags&syscall.MSG_TRUNC != 0 {
			r.truncated.Add(1)
		}
		r.messages <- append([]byte(nil), buf[:n]...)
	}
}

// write appends the messages to the file, flushing whenever it has caught up with the
// socket so that a count never waits on the buffer.
func (r *syslogReceiver) write() {
	w := bufio.NewWriterSize(r.file, 256<<10)
	var line []byte
	var err error
	for message := range r.messages {
		line = records.SyslogLine(line[:0], message)
		if _, werr := w.Write(line); werr != nil && err == nil {
			err = werr
		}
		if len(r.messages) == 0 {
			if ferr := w.Flush(); ferr != nil && err == nil {
				err = ferr
			}
		}
	}
	r.written <- errors.Join(err, w.Flush())
}

// Received is the number of messages received so far; Truncated those longer than the
// receiver reads whole.
func (r *syslogReceiver) Received() int64 { return r.received.Load() }

// Truncated is the number of messages received longer than syslogMaxMessage, cut short.
func (r *syslogReceiver) Truncated() int64 { return r.truncated.Load() }

// Close stops receiving, writes what was received and removes the socket.
func (r *syslogReceiver) Close() error {
	r.closeOnce.Do(func() {
		err := r.conn.Close()
		<-r.readDone
		err = errors.Join(err, r.readErr, <-r.written, r.file.Close())
		if rmErr := os.Remove(r.socket); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
		r.closeErr = err
	})
	return r.closeErr
}
