package bench

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/workload"
)

// LogFile is one file of a log directory.
type LogFile struct {
	Name string
	Size int64
}

// LogDirectory is a directory of log files written by PostgreSQL's logging collector,
// read either from the local file system or, in a cluster, through the server itself.
type LogDirectory interface {
	List(ctx context.Context) ([]LogFile, error)
	// ReadAt returns up to n bytes of the named file from offset.
	ReadAt(ctx context.Context, name string, offset int64, n int) ([]byte, error)
}

// FileDestination counts a run's records in a log directory, each file through its own
// streaming counter so that a record split across reads is counted once, and only what
// follows a marker record it has the server write first.
//
// The marker is what puts the counters at a record boundary: the logging collector
// writes a multi-line record line by line, so the end of a file may be inside a record,
// and a csvlog counter that starts inside a quoted field reads every later line the
// wrong way round. The files that exist when the destination is created are searched
// from their end for the marker, byte by byte with no notion of records, and counted
// from the line after it; files that appear before the marker is found are searched
// from their start, and files that appear after it are counted from their start, which
// is a record boundary.
type FileDestination struct {
	dir LogDirectory
	// newCounter counts the records of one file.
	newCounter func() records.Counter
	files      map[string]*tailedFile
	// marker is the text of the marker record.
	marker []byte
	// markerFound: the server wrote the marker where the destination read it.
	markerFound bool
	// written counts the bytes read after the marker's line: what the server wrote
	// since, every record included.
	written int64
}

type tailedFile struct {
	offset  int64
	counter records.Counter
	// search, until the marker's line has ended in this file, holds back what is read.
	search *markerSearch
}

// readChunk bounds the memory used per read.
const readChunk = 1 << 20

// LogMarker has the server write one record holding markerPrefix+id to its log, id
// being letters and digits.
type LogMarker func(ctx context.Context, id string) error

// markerPrefix starts every marker's text.
const markerPrefix = "logbench-sync-"

// RaiseLogWith writes the marker through conn with RAISE LOG, which reaches the server
// log whatever the statement logging and at every log_min_messages the API accepts. The
// statement holds the marker's two halves apart, so the statement's own record
// (log_statement) and the marker record's STATEMENT field never hold the marker; the
// marker record is one line in csvlog and jsonlog, and the stderr lines after it are
// CONTEXT and STATEMENT lines, which start no record.
func RaiseLogWith(conn *pgx.Conn) LogMarker {
	return func(ctx context.Context, id string) error {
		_, err := conn.Exec(ctx, "DO $$BEGIN RAISE LOG '"+markerPrefix+"%', '"+id+"'; END$$")
		return err
	}
}

// markerTimeout bounds the wait for the marker to reach the log.
const markerTimeout = 30 * time.Second

// NewFileDestination notes the files of dir, has the server write a marker record with
// mark and waits until the marker is in a file of dir. The run must start after it
// returns: the server writes records in the order it gets them.
func NewFileDestination(
	ctx context.Context,
	dir LogDirectory,
	mark LogMarker,
	format records.Format,
	tag string,
) (*FileDestination, error) {
	return newFileDestination(ctx, dir, mark, func() records.Counter { return records.NewCounter(format, tag) })
}

// NewSyslogFileDestination is NewFileDestination for a directory of files of syslog
// messages written with records.SyslogLine by a server running with settings.
func NewSyslogFileDestination(
	ctx context.Context,
	dir LogDirectory,
	mark LogMarker,
	settings records.SyslogSettings,
	tag string,
) (*FileDestination, error) {
	return newFileDestination(ctx, dir, mark, func() records.Counter {
		return records.NewSyslogLineCounter(settings, tag)
	})
}

func newFileDestination(
	ctx context.Context, dir LogDirectory, mark LogMarker, newCounter func() records.Counter,
) (*FileDestination, error) {
	existing, err := dir.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing log files: %w", err)
	}
	id, err := workload.RandomNonce()
	if err != nil {
		return nil, err
	}
	d := &FileDestination{
		dir:        dir,
		newCounter: newCounter,
		files:      map[string]*tailedFile{},
		marker:     []byte(markerPrefix + id),
	}
	for _, f := range existing {
		d.files[f.Name] = d.newTailedFile(f.Size)
	}
	if err := mark(ctx, id); err != nil {
		return nil, fmt.Errorf("writing a marker record to the server's log: %w", err)
	}
	deadline := time.Now().Add(markerTimeout)
	for {
		if _, err := d.Delivered(ctx); err != nil {
			return nil, err
		}
		if d.markerFound {
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the marker record %s did not reach the log files within %s", d.marker, markerTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(drainPoll):
		}
	}
}

// newTailedFile starts reading a file at offset, searching for the marker first unless
// it has been found.
func (d *FileDestination) newTailedFile(offset int64) *tailedFile {
	f := &tailedFile{offset: offset, counter: d.newCounter()}
	if !d.markerFound {
		f.search = &markerSearch{text: d.marker}
	}
	return f
}

// Delivered reads what was appended since the last call and returns the total count.
func (d *FileDestination) Delivered(ctx context.Context) (int64, error) {
	current, err := d.dir.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing log files: %w", err)
	}
	var total int64
	// In name order, which is the order log_filename's times give the files: a file
	// that follows the marker's is read after the marker was found.
	for _, f := range current {
		tailed, known := d.files[f.Name]
		if !known {
			tailed = d.newTailedFile(0)
			d.files[f.Name] = tailed
		}
		for tailed.offset < f.Size {
			chunk, err := d.dir.ReadAt(ctx, f.Name, tailed.offset, int(min(readChunk, f.Size-tailed.offset)))
			if err != nil {
				return 0, fmt.Errorf("reading %s: %w", f.Name, err)
			}
			if len(chunk) == 0 {
				break
			}
			tailed.offset += int64(len(chunk))
			if tailed.search != nil {
				if chunk = tailed.search.skip(chunk); !tailed.search.done {
					continue
				}
				tailed.search, d.markerFound = nil, true
			}
			d.written += int64(len(chunk))
			if _, err := tailed.counter.Write(chunk); err != nil {
				return 0, fmt.Errorf("counting %s: %w", f.Name, err)
			}
		}
	}
	for _, tailed := range d.files {
		total += tailed.counter.Count()
	}
	return total, nil
}

// LogBytes is what the server wrote to the directory after the marker, up to the last
// count: the run's records and the server's own (checkpoints, connections).
func (d *FileDestination) LogBytes() (int64, bool) { return d.written, true }

// markerSearch passes over a file's bytes up to the end of the line holding the marker.
type markerSearch struct {
	text []byte
	// carry is the end of what was read, where the start of a split marker may be.
	carry []byte
	// seen: the marker has been read; the end of its line is next.
	seen bool
	// done: the marker's line has ended.
	done bool
}

// skip takes the next bytes of the file and returns those after the marker's line:
// none until the line has ended.
func (m *markerSearch) skip(chunk []byte) []byte {
	if !m.seen {
		window := append(m.carry, chunk...)
		at := bytes.Index(window, m.text)
		if at < 0 {
			keep := min(len(window), len(m.text)-1)
			m.carry = append(m.carry[:0:0], window[len(window)-keep:]...)
			return nil
		}
		// carry is shorter than the marker, so the marker ends inside chunk.
		chunk = chunk[at+len(m.text)-len(m.carry):]
		m.seen, m.carry = true, nil
	}
	end := bytes.IndexByte(chunk, '\n')
	if end < 0 {
		return nil
	}
	m.done = true
	return chunk[end+1:]
}

// LocalDirectory is a log directory on this machine.
type LocalDirectory string

// List returns the regular files of the directory in name order.
func (dir LocalDirectory) List(context.Context) ([]LogFile, error) {
	entries, err := os.ReadDir(string(dir))
	if err != nil {
		return nil, err
	}
	files := make([]LogFile, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		if info.Mode().IsRegular() {
			files = append(files, LogFile{Name: e.Name(), Size: info.Size()})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// ReadAt reads up to n bytes of the named file from offset.
func (dir LocalDirectory) ReadAt(_ context.Context, name string, offset int64, n int) ([]byte, error) {
	f, err := os.Open(filepath.Join(string(dir), name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	read, err := f.ReadAt(buf, offset)
	if err == io.EOF {
		err = nil
	}
	return buf[:read], err
}

// StreamDestination counts a run's records in a live stream, such as a container's
// log followed through the Kubernetes API.
type StreamDestination struct {
	mu      sync.Mutex
	counter records.Counter
	err     error
}

// errStreamEnded: a followed log ends only when its container stops, so records of the
// run written after that were never counted.
var errStreamEnded = errors.New("the log stream ended while the run's records were being counted " +
	"(the container stopped or restarted), so the count is incomplete: run the benchmark again")

// NewStreamDestination counts the records of stream in the background until the
// stream ends or the caller closes it. An end of the stream is an error: the stream
// must be followed for as long as the run is counted.
func NewStreamDestination(stream io.ReadCloser, format records.Format, tag string) *StreamDestination {
	d := &StreamDestination{counter: records.NewCounter(format, tag)}
	go func() {
		_, err := io.Copy(lockedWriter{d}, stream)
		d.mu.Lock()
		d.err = cmp.Or(err, errStreamEnded)
		d.mu.Unlock()
	}()
	return d
}

// Delivered returns the records counted so far, or the error that ended the stream.
func (d *StreamDestination) Delivered(context.Context) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counter.Count(), d.err
}

// errNotCaughtUp: no marker of the drain has reached the stream yet.
var errNotCaughtUp = errors.New("no marker logged since the run's sessions ended has reached the stream yet")

// StreamMarks tells when a live stream of the server's log has caught up with it, for a
// stream that drops records on their way, whose count then never reaches the expected
// one (CloudNativePG's instance manager samples what it prints up to 1.30.0): the server
// writes records in the order it gets them, so once a marker it logged after the run's
// sessions ended is in the stream, every record of the run is in it or was dropped.
// Written to, it watches the stream for its markers.
type StreamMarks struct {
	mark LogMarker
	// sessions counts the run's sessions still on the server, which may log as they end.
	sessions func(ctx context.Context) (int64, error)
	id       string
	mu       sync.Mutex
	// search finds in what is written the text every marker starts with.
	search markerSearch
	sent   int
}

// NewStreamMarks watches for markers that mark has the server log once sessions finds
// none of the run's left.
func NewStreamMarks(mark LogMarker, sessions func(ctx context.Context) (int64, error)) (*StreamMarks, error) {
	id, err := workload.RandomNonce()
	if err != nil {
		return nil, err
	}
	return &StreamMarks{mark: mark, sessions: sessions, id: id, search: markerSearch{text: []byte(markerPrefix + id)}}, nil
}

func (m *StreamMarks) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.search.seen {
		m.search.skip(p)
	}
	return len(p), nil
}

// InFlight says nothing is in flight once one of the markers it had the server log
// reached the stream. Until then it cannot tell, and, once the run's sessions have
// ended, has the server log one more: the stream may drop a marker as it drops records.
func (m *StreamMarks) InFlight(ctx context.Context) (int64, error) {
	m.mu.Lock()
	seen := m.search.seen
	m.mu.Unlock()
	if seen {
		return 0, nil
	}
	sessions, err := m.sessions(ctx)
	if err != nil {
		return 0, err
	}
	if sessions > 0 {
		return 0, fmt.Errorf("%d of the run's sessions are still on the server", sessions)
	}
	m.sent++
	if err := m.mark(ctx, fmt.Sprintf("%sn%d", m.id, m.sent)); err != nil {
		return 0, fmt.Errorf("logging a marker: %w", err)
	}
	return 0, errNotCaughtUp
}

type lockedWriter struct{ d *StreamDestination }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	return w.d.counter.Write(p)
}
