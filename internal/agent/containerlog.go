package agent

import (
	"context"
	"fmt"
	"io"
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

// containerLogRun counts a run's records in the primary's container log as the kubelet
// streams it, following its rotations. After the drain it tells whether the kubelet
// rotated the log during the run, which the stream does not show: the newest log file,
// all the API serves without following, then holds fewer of the run's records than the
// stream delivered.
type containerLogRun struct {
	*bench.StreamDestination
	// inNewestFile counts the run's records in the newest container log file.
	inNewestFile func(ctx context.Context) (int64, error)
}

// Account gives the reason of a shortfall when the log was rotated during the run.
func (r containerLogRun) Account(
	ctx context.Context, want records.Expectation, delivered int64,
) (v1alpha1.Records, error) {
	accounted := records.Reconcile(want, delivered, 0)
	if delivered >= want.Records {
		return accounted, nil
	}
	rotated, err := r.rotated(ctx, delivered)
	if err != nil {
		return v1alpha1.Records{}, err
	}
	if rotated {
		accounted.DropReason = rotationDropReason
	}
	return accounted, nil
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

// newContainerLogRun follows the postgres container log of the cluster's primary from
// shortly before now, as a log collector on the node would read it, counting the records
// of format that hold tag.
func newContainerLogRun(
	ctx context.Context, client kubernetes.Interface, namespace, cluster string, format records.Format, tag string,
) (containerLogRun, func(), error) {
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
	run := containerLogRun{StreamDestination: bench.NewStreamDestination(stream, format, tag), inNewestFile: inNewestFile}
	return run, func() { stream.Close() }, nil
}
