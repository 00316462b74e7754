package agent

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/records"
)

// rotationDropReason explains records missing from the container log stream of a run
// during which the kubelet rotated the log.
const rotationDropReason = "the kubelet rotated the container log during the run, and its log stream can skip " +
	"lines at a rotation (kubernetes/kubernetes#115701): some of the missing records may be in the rotated file"

// samplingDropReason explains csvlog records missing from the container log: CloudNativePG
// logs each as the same message, which its logger samples.
const samplingDropReason = "CloudNativePG's instance manager samples the csvlog records it writes to the container " +
	"log (the first 100 identical messages a second, then 1 in 100): format JSONLog passes every record through"

// containerLogRun counts a run's records in the primary's container log as the kubelet
// streams it, following its rotations. After the drain it tells whether the kubelet
// rotated the log during the run, which the stream does not show: the newest log file,
// all the API serves without following, then holds fewer of the run's records than the
// stream delivered.
type containerLogRun struct {
	*bench.StreamDestination
	// inNewestFile counts the run's records in the newest container log file.
	inNewestFile func(ctx context.Context) (int64, error)
	// sampled says CloudNativePG samples the records on their way to the log (csvlog).
	sampled bool
}

// Account gives the reasons of a shortfall: CloudNativePG's sampling, and a rotation of
// the log during the run.
func (r containerLogRun) Account(
	ctx context.Context, want records.Expectation, delivered int64,
) (v1alpha1.Records, error) {
	accounted := records.Reconcile(want, delivered, 0)
	if delivered >= want.Records {
		return accounted, nil
	}
	reasons, err := r.shortfallReasons(ctx, delivered)
	if err != nil {
		return v1alpha1.Records{}, err
	}
	accounted.DropReason = strings.Join(reasons, "; ")
	return accounted, nil
}

// shortfallReasons explain records missing from the log of a run whose stream delivered
// delivered of them.
func (r containerLogRun) shortfallReasons(ctx context.Context, delivered int64) ([]string, error) {
	var reasons []string
	if r.sampled {
		reasons = append(reasons, samplingDropReason)
	}
	rotated, err := r.rotated(ctx, delivered)
	if err != nil {
		return nil, err
	}
	if rotated {
		reasons = append(reasons, rotationDropReason)
	}
	return reasons, nil
}

// rotated tells whether the kubelet rotated the log since the run started: the newest
// file then holds fewer of the run's records than the stream delivered.
func (r containerLogRun) rotated(ctx context.Context, delivered int64) (bool, error) {
	newest, err := r.inNewestFile(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the newest container log file: %w", err)
	}
	return newest < delivered, nil
}

// newContainerLogRun follows the postgres container log of the request's primary from
// shortly before now, as a log collector on the node would read it, counting the records
// of format that hold tag.
func newContainerLogRun(
	ctx context.Context, client kubernetes.Interface, req Request, format records.Format, tag string,
) (containerLogRun, func(), error) {
	namespace, cluster := req.Namespace, req.ClusterName
	pod, err := primaryPod(ctx, client, namespace, cluster)
	if err != nil {
		return containerLogRun{}, func() {}, err
	}
	since := metav1.NewTime(time.Now().Add(-time.Second))
	logOf := func(follow bool) *corev1.PodLogOptions {
		return &corev1.PodLogOptions{Container: "postgres", Follow: follow, SinceTime: &since}
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
	run := containerLogRun{
		StreamDestination: bench.NewStreamDestination(stream, format, tag),
		inNewestFile:      inNewestFile,
		sampled:           req.Destination.EffectiveFormat() == v1alpha1.FormatCSVLog,
	}
	return run, func() { stream.Close() }, nil
}
