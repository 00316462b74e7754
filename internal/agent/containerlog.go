package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/records"
)

// rotationUnverified explains the records a run's container log stream did not deliver
// when the kubelet rotated the log during the run: the API's follow stream skips what it
// had not read at a rotation (kubernetes/kubernetes#115701), and the API serves only the
// newest file afterwards. Those records were written; logbench could not see them.
const rotationUnverified = "the kubelet rotated the container log while logbench followed it through the API, " +
	"whose stream skips what it had not read at a rotation (kubernetes/kubernetes#115701): %d records not read by " +
	"logbench; " + rotatedFilesUnread

// streamSkippedUnverified explains the records beyond the newest container log file when
// the API's follow stream read fewer of the run's records than that file holds: the
// stream skipped lines, as it does when the kubelet rotated the log under it
// (kubernetes/kubernetes#115701), so the older files may hold the rest.
const streamSkippedUnverified = "logbench's stream of the container log through the API read fewer of the run's " +
	"records than the newest log file holds, as it does when the kubelet rotated the container log under it " +
	"(kubernetes/kubernetes#115701): %d records beyond that file not read by logbench; " + rotatedFilesUnread

// rotatedFilesUnread says where the records the API could not serve can be counted.
const rotatedFilesUnread = "the API does not serve the rotated files, a node agent reading the node's log files " +
	"can (count the destination in its loki)"

// containerLogShortfall explains records missing from the container log that neither a
// rotation nor the sampler accounts for.
const containerLogShortfall = "the container log as the kubelet serves it lacks records the server wrote"

// containerLogRun counts a run's records in the primary's container log as the kubelet
// streams it, following its rotations. After the drain it tells whether the kubelet
// rotated the log during the run, which the stream does not show: the newest log file,
// all the API serves without following, then holds fewer of the run's records than the
// stream delivered.
type containerLogRun struct {
	*bench.StreamDestination
	// inNewestFile counts the run's records in the newest container log file.
	inNewestFile func(ctx context.Context) (int64, error)
	// newestFileBegan tells when the newest container log file began: its first line's
	// time, or the zero time when it is empty.
	newestFileBegan func(ctx context.Context) (time.Time, error)
	// opened is when the stream was opened, before the run began.
	opened time.Time
	// sampler rebuilds CloudNativePG's sampler windows of the run's csvlog records, each
	// printed as the same message; nil for the other formats, which it does not sample.
	sampler *records.SamplerWindows
	// marks tells when the stream of a sampled run has caught up with the server; nil
	// without a marker to log or a sampler.
	marks *bench.StreamMarks
}

// InFlight tells when a sampled stream has caught up with the server, for its drain to
// end then rather than after a quiet period (bench.StreamMarks); without marks it
// cannot tell.
func (r containerLogRun) InFlight(ctx context.Context) (int64, error) {
	if r.marks == nil {
		return 0, errors.New("the container log's stream logs no markers")
	}
	return r.marks.InFlight(ctx)
}

// Account reconciles the records the stream delivered: records it missed at a rotation
// are unverified, not dropped; csvlog records are checked against CloudNativePG's
// sampler, which names the loss or shows it exceeds the sampler's.
func (r containerLogRun) Account(
	ctx context.Context, want records.Expectation, delivered int64,
) (v1alpha1.Records, error) {
	count, rotated, err := r.count(ctx, want, delivered)
	if err != nil {
		return v1alpha1.Records{}, err
	}
	accounted := records.Reconcile(want, count)
	accounted.Sampler = r.checkSampler(want, delivered, rotated)
	if accounted.KnownDropped() > 0 {
		accounted.DropReason = containerLogShortfall
		if accounted.Sampler != nil {
			accounted.DropReason = accounted.Sampler.Message
		}
	}
	return accounted, nil
}

// count is what the container log holds of the run as far as logbench can see it, and
// whether the stream missed some of it. A shortfall after a rotation is unverified. When
// the stream read fewer records than the newest file holds, the file's count is
// delivered and what lies beyond it is unverified: the stream skipped lines, so it
// cannot tell what the older files hold.
func (r containerLogRun) count(
	ctx context.Context, want records.Expectation, streamed int64,
) (records.Count, bool, error) {
	count := records.Count{Delivered: streamed}
	if want.Records <= streamed {
		return count, false, nil
	}
	inNewest, err := r.newest(ctx)
	if err != nil {
		return count, false, err
	}
	reason := rotationUnverified
	switch {
	case inNewest > streamed:
		count.Delivered, reason = inNewest, streamSkippedUnverified
	case inNewest == streamed && streamed > 0:
		return count, false, nil
	case inNewest == streamed:
		// Neither the stream nor the newest file holds a record of the run: a stream that
		// stalled at a rotation before the run's first record, if the newest file began
		// after the stream opened.
		if rotated, err := r.rotatedSinceOpened(ctx); err != nil || !rotated {
			return count, false, err
		}
	}
	if shortfall := want.Records - count.Delivered; shortfall > 0 {
		count.Unverified = shortfall
		count.UnverifiedReason = fmt.Sprintf(reason, shortfall)
	}
	return count, true, nil
}

// rotatedSinceOpened tells whether the newest container log file began after the stream
// was opened, or is empty: the kubelet rotated the log since.
func (r containerLogRun) rotatedSinceOpened(ctx context.Context) (bool, error) {
	began, err := r.newestFileBegan(ctx)
	if err != nil {
		return false, fmt.Errorf("reading when the newest container log file began: %w", err)
	}
	return began.IsZero() || began.After(r.opened), nil
}

// checkSampler compares a csvlog run with CloudNativePG's sampler; nil for the other
// formats. After a rotation the stream missed survivors, so the windows are unknown.
func (r containerLogRun) checkSampler(want records.Expectation, delivered int64, rotated bool) *v1alpha1.SamplerCheck {
	if r.sampler == nil {
		return nil
	}
	if rotated {
		return &v1alpha1.SamplerCheck{Verdict: v1alpha1.SamplerUnknown, Message: "the kubelet rotated the container " +
			"log under logbench's stream, which missed records that passed the sampler: its windows cannot be told"}
	}
	check := records.CheckSampler(want, delivered, r.sampler.Log())
	return &check
}

// rotated tells whether the kubelet rotated the log since the run started: the newest
// file then holds fewer of the run's records than the stream delivered.
func (r containerLogRun) rotated(ctx context.Context, delivered int64) (bool, error) {
	inNewest, err := r.newest(ctx)
	return inNewest < delivered, err
}

// newest counts the run's records in the newest container log file.
func (r containerLogRun) newest(ctx context.Context) (int64, error) {
	inNewest, err := r.inNewestFile(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the newest container log file: %w", err)
	}
	return inNewest, nil
}

// newContainerLogRun follows the postgres container log of the request's primary from
// shortly before now, as a log collector on the node would read it, counting the records
// of format that hold tag. A sampled run's drain has the server log markers through a
// session connect opens, unless connect is nil.
func newContainerLogRun(
	ctx context.Context, client kubernetes.Interface, req Request, format records.Format, tag string,
	connect func(context.Context) (*pgx.Conn, error),
) (containerLogRun, func(), error) {
	namespace, cluster := req.Namespace, req.ClusterName
	pod, err := primaryPod(ctx, client, namespace, cluster)
	if err != nil {
		return containerLogRun{}, func() {}, err
	}
	opened := time.Now()
	since := metav1.NewTime(opened.Add(-time.Second))
	logOf := func(follow bool) *corev1.PodLogOptions {
		return &corev1.PodLogOptions{Container: postgresContainer, Follow: follow, SinceTime: &since}
	}
	stream, err := client.CoreV1().Pods(namespace).GetLogs(pod.Name, logOf(true)).Stream(ctx)
	if err != nil {
		return containerLogRun{}, func() {}, err
	}
	inNewestFile := func(ctx context.Context) (int64, error) {
		log, err := client.CoreV1().Pods(namespace).GetLogs(pod.Name, logOf(false)).Stream(ctx)
		if err != nil {
			return 0, err
		}
		defer log.Close()
		counter := records.NewCounter(format, tag)
		if _, err := io.Copy(counter, log); err != nil {
			return 0, err
		}
		return counter.Count(), nil
	}
	newestFileBegan := func(ctx context.Context) (time.Time, error) {
		head := int64(newestFileHead)
		first, err := client.CoreV1().Pods(namespace).GetLogs(pod.Name,
			&corev1.PodLogOptions{Container: postgresContainer, Timestamps: true, LimitBytes: &head}).DoRaw(ctx)
		if err != nil {
			return time.Time{}, err
		}
		return firstLineTime(first)
	}
	run := containerLogRun{inNewestFile: inNewestFile, newestFileBegan: newestFileBegan, opened: opened}
	var counted io.Reader = stream
	closeLog := func() { stream.Close() }
	var mark bench.LogMarker
	// The baseline is read here only to show it logged nothing: no sampler to judge.
	if req.Destination.Type == v1alpha1.DestinationStdout && req.Destination.EffectiveFormat() == v1alpha1.FormatCSVLog {
		run.sampler = records.NewSamplerWindows(tag, since.Time)
		watchers := []io.Writer{run.sampler}
		if connect != nil {
			marker, err := connect(ctx)
			if err != nil {
				stream.Close()
				return containerLogRun{}, func() {}, err
			}
			closeStream := closeLog
			closeLog = func() { closeStream(); marker.Close(context.Background()) }
			mark = bench.RaiseLogWith(marker)
			sessions := func(ctx context.Context) (int64, error) { return bench.SourceOver(marker).Sessions(ctx, tag) }
			if run.marks, err = bench.NewStreamMarks(mark, sessions); err != nil {
				closeLog()
				return containerLogRun{}, func() {}, err
			}
			watchers = append(watchers, run.marks)
		}
		counted = io.TeeReader(stream, io.MultiWriter(watchers...))
	}
	run.StreamDestination = bench.NewStreamDestination(readCloser{counted, stream}, format, tag)
	if run.sampler != nil && mark != nil {
		if err := openSamplerWindow(ctx, run.sampler, mark); err != nil {
			closeLog()
			return containerLogRun{}, func() {}, err
		}
	}
	return run, closeLog, nil
}

// samplerWindowTimeout bounds openSamplerWindow's attempts; the run then goes on, and its
// check on the sampler is unknown.
const samplerWindowTimeout = 5 * time.Second

// samplerMarkerWait is how long openSamplerWindow waits for its marker to reach the
// stream; it looks at the stream every samplerMarkerPoll.
const (
	samplerMarkerWait = time.Second
	samplerMarkerPoll = 20 * time.Millisecond
)

// openSamplerWindow has the server log a marker once the stream has shown no survivor of
// CloudNativePG's sampler for a tick, so that the marker opens a window the stream sees
// start. A stream opened after a warm-up or another run begins inside a window whose
// start it cannot see, and counting windows from the wrong start moves the run's bounds
// by thousands of records (records.SamplerWindows). An attempt fails when another
// session's record passes meanwhile or the marker does not pass.
func openSamplerWindow(ctx context.Context, windows *records.SamplerWindows, mark bench.LogMarker) error {
	deadline := time.Now().Add(samplerWindowTimeout)
	quiet := func(context.Context) (bool, error) { return windows.UntilQuiet() == 0, nil }
	placed := func(context.Context) (bool, error) { return windows.Placed(), nil }
	for attempt := 1; !windows.Placed() && time.Now().Before(deadline); attempt++ {
		if err := wait.PollUntilContextTimeout(ctx, samplerMarkerPoll, time.Until(deadline), true, quiet); err != nil {
			// Never quiet for a tick before the deadline, or ctx ended.
			return ctx.Err()
		}
		if err := mark(ctx, fmt.Sprintf("window%d", attempt)); err != nil {
			return fmt.Errorf("logging a marker to open a window of CloudNativePG's sampler: %w", err)
		}
		// Not placed in time: the marker was sampled away, or another record passed in
		// the tick before it. The next attempt waits for a quiet tick again.
		_ = wait.PollUntilContextTimeout(ctx, samplerMarkerPoll, samplerMarkerWait, true, placed)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// newestFileHead is how much of the newest container log file is read for its first
// line's time.
const newestFileHead = 4096

// firstLineTime reads the time the kubelet puts before a log's first line (PodLogOptions'
// Timestamps); the zero time for an empty log.
func firstLineTime(log []byte) (time.Time, error) {
	if len(log) == 0 {
		return time.Time{}, nil
	}
	stamp, _, _ := bytes.Cut(log, []byte(" "))
	began, err := time.Parse(time.RFC3339Nano, string(stamp))
	if err != nil {
		return time.Time{}, fmt.Errorf("the container log's first line has no time: %w", err)
	}
	return began, nil
}

// readCloser reads through a reader that wraps the stream it closes.
type readCloser struct {
	io.Reader
	io.Closer
}
