// Package localrun runs a LoggingBenchmark against PostgreSQL servers started on this
// machine, one per destination, with the same engine the in-cluster agent uses.
package localrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/destination"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/workload"
)

// Options of a local benchmark.
type Options struct {
	// Installation holds initdb, postgres and pgbench.
	Installation localpg.Installation
	// WorkDir is where each destination's server gets its temporary directory.
	WorkDir string
	// Progress is told about every run; nil means no progress.
	Progress Progress
}

// Progress is notified as runs start and end.
type Progress interface {
	RunStarted(run Run)
	RunFinished(run Run, result v1alpha1.RepeatResult)
}

// Run identifies one pgbench execution of the benchmark.
type Run struct {
	Key results.RunKey
	// Index counts runs from 1 up to Total, skipped destinations excluded.
	Index, Total int
}

// Skipped is a destination that cannot run on this machine.
type Skipped struct {
	Destination string
	Reason      string
}

// Outcome is what a local benchmark measured.
type Outcome struct {
	Runs    map[results.RunKey]v1alpha1.RepeatResult
	Skipped []Skipped
}

// Execute measures every runnable destination at every client count and repeat. When
// ctx is cancelled it stops, cleans up and returns what was measured with ctx's error.
// A destination whose server fails records the failure in its runs and the others go on.
func Execute(ctx context.Context, spec *v1alpha1.LoggingBenchmarkSpec, opts Options) (Outcome, error) {
	outcome := Outcome{Runs: map[results.RunKey]v1alpha1.RepeatResult{}}
	var runnable []destination.Route
	for _, dest := range spec.EffectiveDestinations() {
		route, reason := localRoute(dest)
		if reason != "" {
			outcome.Skipped = append(outcome.Skipped, Skipped{Destination: dest.Name, Reason: reason})
			continue
		}
		runnable = append(runnable, route)
	}
	runsPerDestination := len(spec.Workload.Clients) * int(spec.Workload.Repeats)
	sequence := 0
	for _, route := range runnable {
		runs := func(yield func(Run) bool) {
			for _, clients := range spec.Workload.Clients {
				for repeat := int32(1); repeat <= spec.Workload.Repeats; repeat++ {
					sequence++
					run := Run{
						Key:   results.RunKey{Destination: route.Destination.Name, Clients: clients, Repeat: repeat},
						Index: sequence, Total: len(runnable) * runsPerDestination,
					}
					if !yield(run) {
						return
					}
				}
			}
		}
		if err := measureDestination(ctx, spec, route, opts, runs, outcome.Runs); err != nil {
			return outcome, err
		}
	}
	return outcome, nil
}

// localRoute returns the route of a destination on this machine, or says why it cannot
// run here.
func localRoute(d v1alpha1.Destination) (destination.Route, string) {
	route, err := destination.For(d)
	switch {
	case err != nil:
		return route, err.Error()
	case !route.RunsLocally():
		return route, fmt.Sprintf(
			"%s needs its %s sidecar in a CloudNativePG pod and its endpoint, which a local run does not provide",
			d.Type, d.EffectiveShipper().Kind)
	}
	return route, ""
}

// measureDestination starts the destination's server, initialises pgbench once and
// runs each of runs, storing results in into. Only cancellation is returned as an
// error: a server that fails turns into failed runs.
func measureDestination(ctx context.Context, spec *v1alpha1.LoggingBenchmarkSpec, route destination.Route,
	opts Options, runs func(func(Run) bool), into map[results.RunKey]v1alpha1.RepeatResult) error {
	dest := route.Destination
	failAll := func(err error) error {
		if ctx.Err() != nil {
			// Interrupted, not failed: the runs were never measured.
			return ctx.Err()
		}
		for run := range runs {
			result := v1alpha1.RepeatResult{Repeat: run.Key.Repeat, Error: err.Error()}
			into[run.Key] = result
			if opts.Progress != nil {
				opts.Progress.RunFinished(run, result)
			}
		}
		return ctx.Err()
	}
	dir, err := os.MkdirTemp(opts.WorkDir, "logbench-"+dest.Name+"-")
	if err != nil {
		return failAll(err)
	}
	defer os.RemoveAll(dir)
	// The server may run as another OS user (localpg does so under root): it must be
	// able to reach its own directory inside this one.
	if err := os.Chmod(dir, 0o711); err != nil {
		return failAll(err)
	}
	target, err := newTarget(dir, spec, route)
	if err != nil {
		return failAll(err)
	}
	defer target.close()

	server, err := localpg.Start(ctx, localpg.Config{
		Installation: opts.Installation,
		Dir:          dir,
		Settings:     target.settings,
		Stderr:       target.stderr,
	})
	if err != nil {
		return failAll(fmt.Errorf("starting PostgreSQL for %s: %w", dest.Name, err))
	}
	// Stop even when ctx is cancelled: the server must not outlive logbench. Stop kills a
	// server that does not shut down; its error, once the runs are measured, changes no
	// result.
	defer func() { _ = server.Stop(context.WithoutCancel(ctx)) }()
	if target.logDir == "" {
		target.logDir = server.LogDir()
	}

	// A session of its own writes the marker record each run's count starts after.
	markerSession, err := pgx.Connect(ctx, server.ConnString())
	if err != nil {
		return failAll(fmt.Errorf("connecting to %s: %w", dest.Name, err))
	}
	defer markerSession.Close(context.WithoutCancel(ctx))

	runPgbench := pgbenchRunner(opts.Installation.Binary("pgbench"), server.Env())
	w := spec.Workload
	if output, err := runPgbench(ctx, pgbench.InitArgs(int(w.Scale), w.UnloggedTables), nil); err != nil {
		return failAll(fmt.Errorf("pgbench -i: %w: %s", err, output))
	}
	for run := range runs {
		if opts.Progress != nil {
			opts.Progress.RunStarted(run)
		}
		result, err := measureRun(ctx, spec, dest, run, target, bench.RaiseLogWith(markerSession), runPgbench, dir)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			result = v1alpha1.RepeatResult{Repeat: run.Key.Repeat, Error: err.Error()}
		}
		into[run.Key] = result
		if opts.Progress != nil {
			opts.Progress.RunFinished(run, result)
		}
	}
	return nil
}

func measureRun(ctx context.Context, spec *v1alpha1.LoggingBenchmarkSpec, dest v1alpha1.Destination, run Run,
	target *target, mark bench.LogMarker, runPgbench bench.PgbenchRunner, scratch string) (v1alpha1.RepeatResult, error) {
	nonce, err := workload.RandomNonce()
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	tag := workload.NewTag(dest.Name, run.Key.Clients, run.Key.Repeat, nonce)
	counted, err := bench.NewFileDestination(ctx, bench.LocalDirectory(target.logDir), mark, target.format, tag)
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	return bench.Run(ctx, bench.Execution{
		Destination:  dest,
		Logging:      spec.Logging,
		Workload:     spec.Workload,
		Clients:      run.Key.Clients,
		Repeat:       run.Key.Repeat,
		DrainTimeout: spec.DrainTimeout.Duration,
		Tag:          tag,
		ScriptDir:    scratch,
	}, runPgbench, counted)
}

// pgbenchRunner runs pgbench against the server described by serverEnv.
func pgbenchRunner(binary string, serverEnv []string) bench.PgbenchRunner {
	return func(ctx context.Context, args, extraEnv []string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Env = append(append(os.Environ(), serverEnv...), extraEnv...)
		return cmd.CombinedOutput()
	}
}

// target is where a destination's records end up on this machine and how to count them.
type target struct {
	settings map[string]string
	// logDir holds the destination's log files; its records are counted there. Empty
	// until the server has started when the logging collector writes them.
	logDir string
	format records.Format
	// stderr receives the server's stderr, as a container runtime would, when the
	// destination is the server's standard output.
	stderr *os.File
}

// containerLogName is the file playing the container log of Stdout and None.
const containerLogName = "container.log"

func newTarget(dir string, spec *v1alpha1.LoggingBenchmarkSpec, route destination.Route) (*target, error) {
	t := &target{settings: spec.ServerParameters(route.Destination), format: route.LocalFormat()}
	maps.Copy(t.settings, route.LocalSettings())
	if route.Counted == destination.ContainerLog {
		// logbench appends the server's standard error to a file, as a container runtime
		// does.
		t.logDir = filepath.Join(dir, "container")
		if err := os.Mkdir(t.logDir, 0o700); err != nil {
			return nil, err
		}
		file, err := os.Create(filepath.Join(t.logDir, containerLogName))
		if err != nil {
			return nil, err
		}
		t.stderr = file
	}
	return t, nil
}

func (t *target) close() {
	if t.stderr != nil {
		t.stderr.Close()
	}
}

// IgnoredFields lists the fields of spec that only mean something in a Kubernetes
// cluster and that a local run ignores.
func IgnoredFields(spec *v1alpha1.LoggingBenchmarkSpec) []string {
	var ignored []string
	note := func(set bool, field string) {
		if set {
			ignored = append(ignored, field)
		}
	}
	p := spec.Postgres
	note(p.ImageName != "", "spec.postgres.imageName")
	note(p.Instances > 1, "spec.postgres.instances")
	note(p.Storage.StorageClass != nil, "spec.postgres.storage")
	note(len(p.Resources.Limits)+len(p.Resources.Requests) > 0, "spec.postgres.resources")
	note(len(p.NodeSelector) > 0 || len(p.Tolerations) > 0 || p.Affinity != nil, "spec.postgres scheduling")
	note(len(spec.Workload.Resources.Limits)+len(spec.Workload.Resources.Requests) > 0, "spec.workload.resources")
	return ignored
}

// ErrNothingToRun is returned when no destination can run locally.
var ErrNothingToRun = errors.New("no destination of this benchmark can run locally")
