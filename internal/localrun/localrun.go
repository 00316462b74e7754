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
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/destination"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/schedule"
	"github.com/logbench/logbench/internal/shipping"
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
	// Seed orders the runs (schedule.Plan).
	Seed int64
	// TCP connects pgbench over TCP on the loopback, as a client on another machine
	// would, rather than through the Unix socket, which dilutes every overhead less.
	TCP bool
	// CounterLibrary is the logbench_counter library every server preloads (its path,
	// as shared_preload_libraries and CREATE FUNCTION take it: FindCounter), so that the
	// expected records of every run are counted at the source; empty runs without it,
	// the expected records predicted.
	CounterLibrary string
	// ConfigMaps are those given beside the benchmark: spec.workload.scripts' is read
	// from them.
	ConfigMaps []corev1.ConfigMap
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
	// Planned are the runs of the destinations that run here, in order (schedule.Plan).
	Planned []results.RunKey
}

// PlannedRuns are the runs of the benchmark in order, for its status: those planned here
// and, as in a cluster, those of the skipped destinations, which never ran.
func (o Outcome) PlannedRuns(spec *v1alpha1.LoggingBenchmarkSpec, seed int64) []results.RunKey {
	skipped := map[string]bool{}
	for _, dest := range o.Skipped {
		skipped[dest.Destination] = true
	}
	planned := slices.Clone(o.Planned)
	for _, run := range schedule.Plan(spec, seed, o.Runs) {
		if skipped[run.Destination] {
			planned = append(planned, run)
		}
	}
	return planned
}

// Execute measures every runnable destination at every client count and repeat, in the
// order schedule.Plan gives them with opts.Seed. Every destination's server is up before the first run, as in a
// cluster, so that the runs can interleave; idle, they cost little. When ctx is
// cancelled it stops, cleans up and returns what was measured with ctx's error. A
// destination whose server fails records the failure in its runs and the others go on.
func Execute(ctx context.Context, spec *v1alpha1.LoggingBenchmarkSpec, opts Options) (Outcome, error) {
	outcome := Outcome{Runs: map[results.RunKey]v1alpha1.RepeatResult{}}
	if err := CheckCounter(spec, opts.CounterLibrary); err != nil {
		return outcome, err
	}
	scripts, err := scriptsOf(spec.Workload.Scripts, opts.ConfigMaps)
	if err != nil {
		return outcome, err
	}
	servers := map[string]*destinationServer{}
	failed := map[string]error{}
	defer func() {
		for _, server := range servers {
			server.close(context.WithoutCancel(ctx))
		}
	}()
	for _, dest := range spec.EffectiveDestinations() {
		route, reason := localRoute(dest)
		if reason != "" {
			outcome.Skipped = append(outcome.Skipped, Skipped{Destination: dest.Name, Reason: reason})
			continue
		}
		server, err := startDestination(ctx, spec, route, scripts, opts)
		if ctx.Err() != nil {
			// Interrupted, not failed: the runs were never measured.
			return outcome, ctx.Err()
		}
		if err != nil {
			failed[dest.Name] = err
			continue
		}
		servers[dest.Name] = server
	}
	// A ramp's plan grows as its rounds finish: it is made again after every run, of the
	// destinations that run here.
	runnable := *spec
	runnable.Destinations = slices.DeleteFunc(slices.Clone(spec.Destinations), func(dest v1alpha1.Destination) bool {
		_, up := servers[dest.Name]
		_, down := failed[dest.Name]
		return !up && !down
	})
	for index := 1; ; index++ {
		outcome.Planned = schedule.Plan(&runnable, opts.Seed, outcome.Runs)
		next := slices.IndexFunc(outcome.Planned, func(run results.RunKey) bool {
			_, done := outcome.Runs[run]
			return !done
		})
		if next < 0 {
			break
		}
		key := outcome.Planned[next]
		run := Run{Key: key, Index: index, Total: len(outcome.Planned)}
		if opts.Progress != nil {
			opts.Progress.RunStarted(run)
		}
		err := failed[key.Destination]
		var result v1alpha1.RepeatResult
		if err == nil {
			result, err = servers[key.Destination].measure(ctx, spec, key)
		}
		if ctx.Err() != nil {
			return outcome, ctx.Err()
		}
		if err != nil {
			result = v1alpha1.RepeatResult{Repeat: key.Repeat, Error: err.Error()}
		}
		outcome.Runs[key] = result
		if opts.Progress != nil {
			opts.Progress.RunFinished(run, result)
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
	case d.CountedInNodeAgentsLoki():
		return route, "it is counted in the Loki the cluster's node agent ships the container log to; " +
			"a local run has neither: leave loki out to measure the server's standard output here"
	case !route.RunsLocally():
		return route, fmt.Sprintf(
			"%s needs its %s sidecar in a CloudNativePG pod and its endpoint, which a local run does not provide",
			d.Type, d.EffectiveShipper().Kind)
	case shipping.UsesRsyslog(d):
		return route, "receiver Rsyslog runs rsyslogd in the CloudNativePG pod; a local run receives with " +
			"logbench's own receiver, which drops nothing: leave receiver out to measure syslog here"
	case route.Counted == destination.SyslogReceiver && d.EffectiveSyslog().Transport != v1alpha1.SyslogLocal:
		return route, fmt.Sprintf("transport %s forwards the records from the receiver of a CloudNativePG pod to a "+
			"receiver Service, which a local run does not have: measure transport local here", d.EffectiveSyslog().Transport)
	case route.Counted == destination.SyslogReceiver && !runsAsRoot():
		return route, localpg.ErrDevLogNeedsRoot.Error()
	}
	return route, ""
}

// runsAsRoot tells whether a local server's syslog() can reach logbench's receiver; a
// variable for the tests.
var runsAsRoot = func() bool { return os.Geteuid() == 0 }

// destinationServer is the PostgreSQL server of one destination, ready to measure runs.
type destinationServer struct {
	route      destination.Route
	dir        string
	target     *target
	mark       bench.LogMarker
	runPgbench bench.PgbenchRunner
	meter      bench.Meter
	// source counts the records at the source; nil without the counter.
	source bench.Source
	// scriptsDir holds workload.scripts' files, by key.
	scriptsDir string
	// closers release what startDestination acquired, in reverse order.
	closers []func(ctx context.Context)
}

// startDestination starts the destination's server in a directory of its own and
// initialises pgbench, or writes workload.scripts' files (scripts, by key) there and
// runs their init.
func startDestination(
	ctx context.Context, spec *v1alpha1.LoggingBenchmarkSpec, route destination.Route, scripts map[string]string,
	opts Options,
) (_ *destinationServer, err error) {
	dest := route.Destination
	s := &destinationServer{route: route}
	defer func() {
		if err != nil {
			s.close(context.WithoutCancel(ctx))
		}
	}()
	if s.dir, err = os.MkdirTemp(opts.WorkDir, "logbench-"+dest.Name+"-"); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func(context.Context) { _ = os.RemoveAll(s.dir) })
	// The server may run as another OS user (localpg does so under root): it must be
	// able to reach its own directory inside this one.
	if err := os.Chmod(s.dir, 0o711); err != nil {
		return nil, err
	}
	if s.target, err = newTarget(s.dir, spec, route); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, func(context.Context) { s.target.close() })
	preload, err := preloadedLibraries(spec, dest, s.target.settings, opts)
	if err != nil {
		return nil, err
	}
	if len(preload) > 0 {
		s.target.settings["shared_preload_libraries"] = strings.Join(preload, ",")
	}
	server, err := localpg.Start(ctx, localpg.Config{
		Installation: opts.Installation,
		Dir:          s.dir,
		Settings:     s.target.settings,
		Stderr:       s.target.stderr,
		DevLog:       s.target.devLog,
	})
	if err != nil {
		return nil, fmt.Errorf("starting PostgreSQL for %s: %w", dest.Name, err)
	}
	// Stop kills a server that does not shut down; its error, once the runs are
	// measured, changes no result.
	s.closers = append(s.closers, func(ctx context.Context) { _ = server.Stop(ctx) })
	s.meter = processMeter{proc: "/proc", pid: server.PID()}
	if s.target.logDir == "" {
		s.target.logDir = server.LogDir()
	}
	// A session of its own writes the marker record each run's count starts after.
	markerSession, err := pgx.Connect(ctx, server.ConnString())
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", dest.Name, err)
	}
	s.closers = append(s.closers, func(ctx context.Context) { _ = markerSession.Close(ctx) })
	s.mark = bench.RaiseLogWith(markerSession)
	if opts.CounterLibrary != "" {
		if err := bench.InstallSourceFunctions(ctx, markerSession, opts.CounterLibrary); err != nil {
			return nil, fmt.Errorf("%s: %w", dest.Name, err)
		}
		s.source = bench.SourceOver(markerSession)
	}
	pgbenchEnv := server.UnixSocketEnv()
	if opts.TCP {
		pgbenchEnv = server.Env()
	}
	s.runPgbench = pgbenchRunner(opts.Installation.Binary("pgbench"), pgbenchEnv)
	w := spec.Workload
	if w.Scripts != nil {
		if s.scriptsDir, err = writeScripts(ctx, s.dir, w.Scripts, scripts, server.ConnString()); err != nil {
			return nil, fmt.Errorf("%s: %w", dest.Name, err)
		}
		return s, nil
	}
	if output, err := s.runPgbench(ctx, pgbench.InitArgs(int(w.Scale), w.UnloggedTables), nil); err != nil {
		return nil, fmt.Errorf("pgbench -i: %w: %s", err, output)
	}
	return s, nil
}

// preloadedLibraries are the libraries the destination's server preloads, as
// CloudNativePG would load them for its parameters: pgaudit and auto_explain when
// parameters of theirs are set, then the counter, last so that it counts what the
// others' log hooks leave (logbench_counter/README.md).
func preloadedLibraries(
	spec *v1alpha1.LoggingBenchmarkSpec, dest v1alpha1.Destination, parameters map[string]string, opts Options,
) ([]string, error) {
	inst := opts.Installation
	var preload []string
	if v1alpha1.UsesPgaudit(parameters) {
		if !inst.HasLibrary("pgaudit") {
			return nil, fmt.Errorf("%s needs the pgaudit extension, which PostgreSQL %d in %s does not have "+
				"(Debian and Ubuntu: apt-get install postgresql-%d-pgaudit)", spec.PgauditField(dest),
				inst.Version, inst.BinDir, inst.Version)
		}
		preload = append(preload, "pgaudit")
	}
	if v1alpha1.UsesAutoExplain(parameters) {
		if !inst.HasLibrary("auto_explain") {
			return nil, fmt.Errorf("destination %s's logging sets autoExplain, which needs the auto_explain module, "+
				"which PostgreSQL %d in %s does not have (it comes with PostgreSQL's contrib modules)",
				dest.Name, inst.Version, inst.BinDir)
		}
		preload = append(preload, "auto_explain")
	}
	if opts.CounterLibrary != "" {
		preload = append(preload, opts.CounterLibrary)
	}
	return preload, nil
}

// close stops the server and removes its directory; the server must not outlive
// logbench, so it runs even when the benchmark was cancelled.
func (s *destinationServer) close(ctx context.Context) {
	for _, release := range slices.Backward(s.closers) {
		release(ctx)
	}
	s.closers = nil
}

// measure runs one of the destination's runs, after its warm-up when it has one.
func (s *destinationServer) measure(
	ctx context.Context, spec *v1alpha1.LoggingBenchmarkSpec, run results.RunKey,
) (v1alpha1.RepeatResult, error) {
	nonce, err := workload.RandomNonce()
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	dest := s.route.Destination
	execution := bench.Execution{
		Destination:  dest,
		Logging:      spec.Logging,
		Workload:     spec.Workload,
		Clients:      run.Clients,
		Repeat:       run.Repeat,
		DrainTimeout: spec.DrainTimeout.Duration,
		Tag:          workload.NewTag(dest.Name, run.Clients, run.Repeat, nonce),
		WarmupTag:    workload.NewWarmupTag(dest.Name, run.Clients, nonce),
		ScriptDir:    s.dir,
		ScriptsDir:   s.scriptsDir,
		Meter:        s.meter,
		Source:       s.source,
	}
	if err := bench.WarmUp(ctx, execution, s.runPgbench); err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	var counted *bench.FileDestination
	if s.route.Counted == destination.SyslogReceiver {
		counted, err = bench.NewSyslogFileDestination(ctx, bench.LocalDirectory(s.target.logDir), s.mark,
			s.route.SyslogSettings(), execution.Tag)
	} else {
		counted, err = bench.NewFileDestination(ctx, bench.LocalDirectory(s.target.logDir), s.mark, s.target.format,
			execution.Tag)
	}
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	return bench.Run(ctx, execution, s.runPgbench, counted)
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
	// devLog is the socket of receiver, which the server's syslog() reaches as
	// /dev/log, for a Syslog destination.
	devLog   string
	receiver *syslogReceiver
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
	if route.Counted == destination.SyslogReceiver {
		// logbench's receiver writes the messages to a file in logDir, where they are
		// counted as the files of the logging collector are.
		t.logDir = filepath.Join(dir, "syslog")
		if err := os.Mkdir(t.logDir, 0o700); err != nil {
			return nil, err
		}
		t.devLog = filepath.Join(t.logDir, "log")
		receiver, err := listenSyslog(t.devLog, filepath.Join(t.logDir, syslogFileName))
		if err != nil {
			return nil, err
		}
		t.receiver = receiver
	}
	return t, nil
}

// syslogFileName is the file of the messages logbench's receiver got.
const syslogFileName = "messages.log"

func (t *target) close() {
	if t.stderr != nil {
		t.stderr.Close()
	}
	if t.receiver != nil {
		_ = t.receiver.Close()
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
	// A local run loads the counter it finds (--counter-library) whatever the field says.
	note(p.Counter != nil, "spec.postgres.counter")
	note(len(spec.Workload.Resources.Limits)+len(spec.Workload.Resources.Requests) > 0, "spec.workload.resources")
	note(slices.ContainsFunc(spec.Destinations, func(d v1alpha1.Destination) bool { return d.Placement != "" }),
		"spec.destinations[].placement")
	// Local servers start at once or fail with their own message: no pod waits.
	note(spec.ClusterReadyTimeout != nil, "spec.clusterReadyTimeout")
	note(spec.PodStartTimeout != nil, "spec.podStartTimeout")
	return ignored
}

// ErrNothingToRun is returned when no destination can run locally.
var ErrNothingToRun = errors.New("no destination of this benchmark can run locally")
