package localrun

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logbench/logbench/internal/records"
)

// TestReceiverWritesEachMessageAsALine sends messages as syslog() does, one datagram
// each, a multi-line one among them: the file holds one escaped line per message, which
// the syslog line counter reads, and Close removes the socket.
func TestReceiverWritesEachMessageAsALine(t *testing.T) {
	dir := t.TempDir()
	socket, file := filepath.Join(dir, "log"), filepath.Join(dir, "messages.log")
	r, err := listenSyslog(socket, file)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	messages := []string{
		"<134>Nov 26 12:14:02 postgres[7]: [1-1] LOG:  statement: SELECT 1 /* tag */",
		"<134>Nov 26 12:14:02 postgres[7]: [2] LOG:  statement: SELECT\n\t2 /* tag */\n",
	}
	for _, m := range messages {
		if _, err := conn.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for r.Received() < int64(len(messages)) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, m := range messages {
		want = records.SyslogLine(want, []byte(m))
	}
	if string(written) != string(want) || r.Truncated() != 0 {
		t.Errorf("the file holds %q (%d truncated), want %q", written, r.Truncated(), want)
	}
	if _, err := os.Stat(socket); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after Close: %v", err)
	}
}
