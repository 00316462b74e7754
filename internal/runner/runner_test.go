package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/results"
)

const namespace = "bench"

var csvRun = results.RunKey{Destination: "csv", Clients: 2, Repeat: 1}

// fakeRuns plays agent.Run: each call is counted, and answers with what result returns.
type fakeRuns struct {
	mu       sync.Mutex
	requests []agent.Request
	result   func(context.Context, agent.Request) (v1alpha1.RepeatResult, error)
}

func (f *fakeRuns) run(ctx context.Context, req agent.Request) (v1alpha1.RepeatResult, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	return f.result(ctx, req)
}

func (f *fakeRuns) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func succeeding(_ context.Context, req agent.Request) (v1alpha1.RepeatResult, error) {
	return v1alpha1.RepeatResult{TPS: float64(100 * req.Clients)}, nil
}

// harness is a runner of the csv destination of benchmark b, started on a fake API.
type harness struct {
	t       *testing.T
	client  client.WithWatch
	runs    *fakeRuns
	done    chan error
	cancel  context.CancelFunc
	stopped sync.Once
}

func start(t *testing.T, result func(context.Context, agent.Request) (v1alpha1.RepeatResult, error),
	objects ...client.Object,
) *harness {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(append(objects, runnerPods()...)...).Build()
	return startOn(t, c, result)
}

// startOn starts a runner of the csv destination of benchmark b with c, changed by
// configure.
func startOn(t *testing.T, c client.WithWatch, result func(context.Context, agent.Request) (v1alpha1.RepeatResult, error),
	configure ...func(*Runner),
) *harness {
	h := &harness{
		t:      t,
		client: c,
		runs:   &fakeRuns{result: result},
		done:   make(chan error, 1),
	}
	runner := &Runner{
		Client: h.client,
		Template: agent.Request{Benchmark: "b", BenchmarkUID: "uid-b", Namespace: namespace, ClusterName: "b-csv",
			Destination: v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
		Run: h.runs.run,
		Pod: "b-csv-runner-1",
		Log: testr.New(t),
	}
	for _, change := range configure {
		change(runner)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- runner.Start(ctx) }()
	t.Cleanup(h.stop)
	return h
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := errors.Join(v1alpha1.AddToScheme(scheme), corev1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// runnerPods are the runner's pod, on node-a, and the primary of its cluster, on node-b.
func runnerPods() []client.Object {
	containers := []corev1.Container{{Name: "main", Image: "image"}}
	return []client.Object{
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "b-csv-runner-1"},
			Spec: corev1.PodSpec{NodeName: "node-a", Containers: containers}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "b-csv-1",
			Labels: cloudnativepg.PrimaryPodLabels("b-csv")}, Spec: corev1.PodSpec{NodeName: "node-b", Containers: containers}},
	}
}

// stop cancels the runner and waits for Start to return nil.
func (h *harness) stop() {
	h.t.Helper()
	h.stopped.Do(func() {
		h.cancel()
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("Start: %v", err)
			}
		case <-time.After(10 * time.Second):
			h.t.Error("the runner did not stop once cancelled")
		}
	})
}

// assign writes run as the benchmark's current run, as the operator does.
func (h *harness) assign(run string) {
	h.t.Helper()
	benchmark := &v1alpha1.LoggingBenchmark{}
	if err := h.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: "b"}, benchmark); err != nil {
		h.t.Fatal(err)
	}
	benchmark.Status.Phase, benchmark.Status.Progress.Current = v1alpha1.PhaseRunning, run
	if err := h.client.Update(context.Background(), benchmark); err != nil {
		h.t.Fatal(err)
	}
}

// record reads run's LoggingBenchmarkRun once it exists.
func (h *harness) record(run results.RunKey) *v1alpha1.LoggingBenchmarkRun {
	h.t.Helper()
	record := &v1alpha1.LoggingBenchmarkRun{}
	eventually(h.t, "run "+run.String()+" recorded", func() bool {
		err := h.client.Get(context.Background(),
			client.ObjectKey{Namespace: namespace, Name: builders.RunRecordName("b", run)}, record)
		return err == nil
	})
	return record
}

func benchmark(phase v1alpha1.Phase, current string) *v1alpha1.LoggingBenchmark {
	return &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "b", UID: "uid-b"},
		Status:     v1alpha1.LoggingBenchmarkStatus{Phase: phase, Progress: v1alpha1.Progress{Current: current}},
	}
}

func eventually(t *testing.T, what string, condition func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !condition(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// never checks for a while that condition stays false.
func never(t *testing.T, what string, condition func() bool) {
	t.Helper()
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if condition() {
			t.Fatal(what)
		}
	}
}

func TestAssignedRunRunsOnceAndIsRecorded(t *testing.T) {
	h := start(t, succeeding, benchmark(v1alpha1.PhaseRunning, "csv/2/1"))
	record := h.record(csvRun)

	if record.Status.TPS != 200 || record.Status.Repeat != 1 || record.Status.Error != "" ||
		record.Status.FailedAttempts != nil || record.Status.ClientNode != "node-a" || record.Status.ServerNode != "node-b" {
		t.Errorf("recorded %+v", record.Status)
	}
	if record.Spec.Benchmark != "b" || record.Spec.Destination != "csv" || record.Spec.Clients != 2 {
		t.Errorf("record's spec %+v", record.Spec)
	}
	owner := metav1.GetControllerOf(record)
	if owner == nil || owner.UID != "uid-b" || owner.Kind != "LoggingBenchmark" || owner.BlockOwnerDeletion != nil {
		t.Errorf("record's controller %+v", owner)
	}
	never(t, "the recorded run ran again", func() bool { return h.runs.count() > 1 })
	if req := h.runs.requests[0]; req.Clients != 2 || req.Repeat != 1 || req.ClusterName != "b-csv" {
		t.Errorf("ran %+v", req)
	}

	h.assign("csv/4/1")
	h.record(results.RunKey{Destination: "csv", Clients: 4, Repeat: 1})
	if h.runs.count() != 2 {
		t.Errorf("%d runs, want 2", h.runs.count())
	}
}

func TestRecordedRunIsNotRunAgain(t *testing.T) {
	recorded := builders.RunRecord(benchmark(v1alpha1.PhaseRunning, ""), csvRun, v1alpha1.RepeatResult{TPS: 1})
	h := start(t, succeeding, benchmark(v1alpha1.PhaseRunning, "csv/2/1"), recorded)

	never(t, "a recorded run ran", func() bool { return h.runs.count() > 0 })
	h.assign("csv/2/2")
	h.record(results.RunKey{Destination: "csv", Clients: 2, Repeat: 2})
	if h.runs.count() != 1 {
		t.Errorf("%d runs, want 1", h.runs.count())
	}
}

func TestRunnerWaitsForARunOfItsDestination(t *testing.T) {
	for name, status := range map[string]struct {
		phase   v1alpha1.Phase
		current string
	}{
		"another destination's run": {v1alpha1.PhaseRunning, "stdout/2/1"},
		"clusters provisioning":     {v1alpha1.PhaseProvisioning, "csv/2/1"},
		"no run":                    {v1alpha1.PhaseSucceeded, ""},
		"an unreadable run":         {v1alpha1.PhaseRunning, "csv/two/1"},
	} {
		t.Run(name, func(t *testing.T) {
			h := start(t, succeeding, benchmark(status.phase, status.current))
			never(t, "the runner ran "+status.current, func() bool { return h.runs.count() > 0 })
			h.assign("csv/2/1")
			h.record(csvRun)
		})
	}
}

func TestRunnerWaitsForItsBenchmark(t *testing.T) {
	h := start(t, succeeding)
	never(t, "the runner ran without a benchmark", func() bool { return h.runs.count() > 0 })
	if err := h.client.Create(context.Background(), benchmark(v1alpha1.PhaseRunning, "csv/2/1")); err != nil {
		t.Fatal(err)
	}
	h.record(csvRun)
}

// successor is a benchmark of b's name created after b was deleted, which assigns run.
func successor(run string) *v1alpha1.LoggingBenchmark {
	next := benchmark(v1alpha1.PhaseRunning, run)
	next.UID = "uid-b-successor"
	return next
}

func TestRunnerOfADeletedBenchmarkTakesNoRunOfItsSuccessor(t *testing.T) {
	h := start(t, succeeding, successor("csv/2/1"))
	never(t, "the runner of the deleted benchmark ran its successor's run", func() bool { return h.runs.count() > 0 })
}

func TestRunOfADeletedBenchmarkStopsWhenItsSuccessorComes(t *testing.T) {
	started := make(chan struct{}, Attempts)
	var withdrawn atomic.Bool
	h := start(t, func(ctx context.Context, request agent.Request) (v1alpha1.RepeatResult, error) {
		defer withdrawn.Store(true)
		return blockingRun(started)(ctx, request)
	}, benchmark(v1alpha1.PhaseRunning, "csv/2/1"))
	<-started

	ctx := context.Background()
	if err := h.client.Delete(ctx, benchmark(v1alpha1.PhaseRunning, "")); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Create(ctx, successor("csv/2/1")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the run withdrawn", withdrawn.Load)
	never(t, "the runner ran its successor's run", func() bool { return h.runs.count() > 1 })
	h.stop()
	err := h.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: builders.RunRecordName("b", csvRun)},
		&v1alpha1.LoggingBenchmarkRun{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the withdrawn run's record: %v, want none", err)
	}
}

func TestFailingRunIsTriedThreeTimesThenRecordedFailed(t *testing.T) {
	h := start(t, func(context.Context, agent.Request) (v1alpha1.RepeatResult, error) {
		return v1alpha1.RepeatResult{}, errors.New("pgbench: connection refused")
	}, benchmark(v1alpha1.PhaseRunning, "csv/2/1"))

	record := h.record(csvRun)
	if record.Status.Error != "pgbench: connection refused" || record.Status.ClientNode != "node-a" {
		t.Errorf("recorded error %q", record.Status.Error)
	}
	if h.runs.count() != Attempts {
		t.Errorf("%d attempts, want %d", h.runs.count(), Attempts)
	}
	if want := []string{"pgbench: connection refused", "pgbench: connection refused"}; !slices.Equal(
		record.Status.FailedAttempts, want) {
		t.Errorf("failed attempts before the last %q, want %q", record.Status.FailedAttempts, want)
	}
}

func TestRunSucceedingOnItsLastAttemptIsRecordedAsSucceeded(t *testing.T) {
	attempts := 0
	h := start(t, func(ctx context.Context, req agent.Request) (v1alpha1.RepeatResult, error) {
		if attempts++; attempts < Attempts {
			return v1alpha1.RepeatResult{}, fmt.Errorf("the primary restarted (attempt %d)", attempts)
		}
		return succeeding(ctx, req)
	}, benchmark(v1alpha1.PhaseRunning, "csv/2/1"))

	record := h.record(csvRun)
	if record.Status.Error != "" || record.Status.TPS != 200 {
		t.Errorf("recorded %+v", record.Status)
	}
	// The record says what the attempts before the measured one met.
	if want := []string{"the primary restarted (attempt 1)", "the primary restarted (attempt 2)"}; !slices.Equal(
		record.Status.FailedAttempts, want) {
		t.Errorf("failed attempts %q, want %q", record.Status.FailedAttempts, want)
	}
}

// blockingRun runs until its context ends, and says when it started.
func blockingRun(started chan<- struct{}) func(context.Context, agent.Request) (v1alpha1.RepeatResult, error) {
	return func(ctx context.Context, _ agent.Request) (v1alpha1.RepeatResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		return v1alpha1.RepeatResult{}, ctx.Err()
	}
}

func TestCancelledRunnerExitsAndLeavesItsRunUnrecorded(t *testing.T) {
	started := make(chan struct{}, Attempts)
	h := start(t, blockingRun(started), benchmark(v1alpha1.PhaseRunning, "csv/2/1"))
	<-started

	h.stop()
	err := h.client.Get(context.Background(),
		client.ObjectKey{Namespace: namespace, Name: builders.RunRecordName("b", csvRun)}, &v1alpha1.LoggingBenchmarkRun{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the interrupted run's record: %v, want none: the next runner runs it", err)
	}
	if h.runs.count() != 1 {
		t.Errorf("%d attempts, want 1: an interruption is no failure", h.runs.count())
	}
}

func TestCancelledRunnerExitsWhileWaiting(t *testing.T) {
	h := start(t, succeeding, benchmark(v1alpha1.PhaseProvisioning, ""))
	h.stop()
}

func TestRunRecordedElsewhereIsStopped(t *testing.T) {
	started := make(chan struct{}, 2*Attempts)
	h := start(t, blockingRun(started), benchmark(v1alpha1.PhaseRunning, "csv/2/1"))
	<-started

	// The operator records the run failed past its deadline, then assigns the next.
	failed := builders.RunRecord(benchmark(v1alpha1.PhaseRunning, ""), csvRun,
		v1alpha1.RepeatResult{Error: "no result within the run's deadline"})
	if err := h.client.Create(context.Background(), failed); err != nil {
		t.Fatal(err)
	}
	h.assign("csv/2/2")
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the runner did not take the next run")
	}
	if record := h.record(csvRun); record.Status.Error != "no result within the run's deadline" {
		t.Errorf("the operator's record was replaced: %+v", record.Status)
	}
	if h.runs.count() != 2 {
		t.Errorf("%d attempts, want 2: a withdrawn run is not retried", h.runs.count())
	}
}

func TestRunnerWithoutItsRightsStops(t *testing.T) {
	forbidden := apierrors.NewForbidden(v1alpha1.GroupVersion.WithResource("loggingbenchmarks").GroupResource(),
		"b", errors.New("no rights"))
	for name, funcs := range map[string]interceptor.Funcs{
		"to watch its benchmark": {Watch: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption,
		) (watch.Interface, error) {
			return nil, forbidden
		}},
		"to record its runs": {Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return forbidden
		}},
	} {
		t.Run(name, func(t *testing.T) {
			c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(newScheme(t)).
				WithObjects(append(runnerPods(), benchmark(v1alpha1.PhaseRunning, "csv/2/1"))...).Build(), funcs)
			runner := &Runner{Client: c, Template: agent.Request{Benchmark: "b", Namespace: namespace, ClusterName: "b-csv",
				Destination: v1alpha1.Destination{Name: "csv"}}, Run: succeeding, Pod: "b-csv-runner-1", Log: testr.New(t)}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := runner.Start(ctx); !apierrors.IsForbidden(err) {
				t.Errorf("Start = %v, want the API server's refusal", err)
			}
		})
	}
}

func TestTimedOutWatchIsOpenedAgainAtOnce(t *testing.T) {
	var watches atomic.Int32
	c := interceptor.NewClient(fake.NewClientBuilder().WithScheme(newScheme(t)).
		WithObjects(append(runnerPods(), benchmark(v1alpha1.PhaseProvisioning, ""))...).Build(),
		interceptor.Funcs{Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList,
			options ...client.ListOption,
		) (watch.Interface, error) {
			// The API server's answer when its watch cache lags behind.
			if watches.Add(1) <= 3 {
				return nil, apierrors.NewTimeoutError("Too large resource version: 2, current: 1", 1)
			}
			return c.Watch(ctx, list, options...)
		}})
	// Not after the delay between a run's attempts.
	h := startOn(t, c, succeeding, func(r *Runner) { r.RetryDelay = time.Hour })
	eventually(t, "the watch opened again", func() bool { return watches.Load() > 3 })
	h.assign("csv/2/1")
	h.record(csvRun)
}
