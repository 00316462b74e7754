package bench

import (
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
// was written after the destination was created.
type FileDestination struct {
	dir    LogDirectory
	format records.Format
	tag    string
	files  map[string]*tailedFile
}

type tailedFile struct {
	offset  int64
	counter records.Counter
	// ignored files are never read: see NewFileDestination.
	ignored bool
}

// readChunk bounds the memory used per read.
const readChunk = 1 << 20

// LogCollector is the server's logging collector, which can be asked for a new file.
type LogCollector interface {
	// Rotate asks the collector to continue in new files.
	Rotate(ctx context.Context) error
	// CurrentFile returns the name, within the log directory, of the file the collector
	// writes records of the format to; "" when it writes none.
	CurrentFile(ctx context.Context, format records.Format) (string, error)
}

// SQLCollector is the logging collector of the server a session is connected to:
// pg_rotate_logfile() and pg_current_logfile() (superuser, or a role granted them).
type SQLCollector struct{ Conn *pgx.Conn }

func (c SQLCollector) Rotate(ctx context.Context) error {
	_, err := c.Conn.Exec(ctx, "SELECT pg_rotate_logfile()")
	return err
}

func (c SQLCollector) CurrentFile(ctx context.Context, format records.Format) (string, error) {
	var current *string
	if err := c.Conn.QueryRow(ctx, "SELECT pg_current_logfile($1)", format.String()).Scan(&current); err != nil || current == nil {
		return "", err
	}
	return filepath.Base(*current), nil
}

// rotationWait is how long a rotation may take to show in the collector's current file
// before it is asked for again: log_filename names files to the second, and a rotation
// within the second of the current file's name reopens that file instead of starting a
// new one.
const rotationWait = 1100 * time.Millisecond

// rotationTimeout bounds the whole wait for a new file.
const rotationTimeout = 15 * time.Second

// NewFileDestination starts counting dir. With a collector, the files dir holds now are
// never read: the collector writes a multi-line record line by line, so the end of a
// file may be inside a record, and a csvlog counter that starts inside a quoted field
// reads every later line the wrong way round. Instead the collector is asked to rotate
// until it writes the format to a file that was not there, and the run's records all go
// to files read from their first byte. Without a collector (a server's standard error,
// which gets each record in one write) the files are read from their current end. The
// run must start after NewFileDestination returns.
func NewFileDestination(ctx context.Context, dir LogDirectory, collector LogCollector, format records.Format, tag string) (*FileDestination, error) {
	existing, err := dir.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing log files: %w", err)
	}
	d := &FileDestination{dir: dir, format: format, tag: tag, files: map[string]*tailedFile{}}
	for _, f := range existing {
		d.files[f.Name] = &tailedFile{offset: f.Size, counter: records.NewCounter(format, tag), ignored: collector != nil}
	}
	if collector == nil {
		return d, nil
	}
	deadline := time.Now().Add(rotationTimeout)
	for time.Now().Before(deadline) {
		if err := collector.Rotate(ctx); err != nil {
			return nil, fmt.Errorf("rotating the server's log file: %w", err)
		}
		if rotated, err := d.awaitNewFile(ctx, collector, time.Now().Add(rotationWait)); rotated || err != nil {
			return d, err
		}
	}
	return nil, fmt.Errorf("the server's logging collector started no new %s file within %s of asking for a rotation: "+
		"log_filename must name files by the time (logbench sets it so) and logging_collector must be on", format, rotationTimeout)
}

// awaitNewFile polls the collector until it writes the destination's format to a file
// that was not there before, or until.
func (d *FileDestination) awaitNewFile(ctx context.Context, collector LogCollector, until time.Time) (bool, error) {
	for {
		current, err := collector.CurrentFile(ctx, d.format)
		if err != nil {
			return false, fmt.Errorf("reading the server's current log file: %w", err)
		}
		if _, known := d.files[current]; current != "" && !known {
			return true, nil
		}
		if !time.Now().Before(until) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Delivered reads what was appended since the last call and returns the total count.
func (d *FileDestination) Delivered(ctx context.Context) (int64, error) {
	current, err := d.dir.List(ctx)
	if err != nil {
		return 0, fmt.Errorf("listing log files: %w", err)
	}
	var total int64
	for _, f := range current {
		tailed, known := d.files[f.Name]
		if !known {
			tailed = &tailedFile{counter: records.NewCounter(d.format, d.tag)}
			d.files[f.Name] = tailed
		}
		if tailed.ignored {
			continue
		}
		for tailed.offset < f.Size {
			chunk, err := d.dir.ReadAt(ctx, f.Name, tailed.offset, int(min(readChunk, f.Size-tailed.offset)))
			if err != nil {
				return 0, fmt.Errorf("reading %s: %w", f.Name, err)
			}
			if len(chunk) == 0 {
				break
			}
			if _, err := tailed.counter.Write(chunk); err != nil {
				return 0, fmt.Errorf("counting %s: %w", f.Name, err)
			}
			tailed.offset += int64(len(chunk))
		}
	}
	for _, tailed := range d.files {
		total += tailed.counter.Count()
	}
	return total, nil
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

type lockedWriter struct{ d *StreamDestination }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.d.mu.Lock()
	defer w.d.mu.Unlock()
	return w.d.counter.Write(p)
}
