package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/jackc/pgx/v5"
	"k8s.io/client-go/kubernetes"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/destination"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/shipping"
	"github.com/logbench/logbench/internal/workload"
)

// Environment is what the agent needs from its pod.
type Environment struct {
	// Connect opens a superuser session; libpq's PG* variables describe the server.
	Connect func(context.Context) (*pgx.Conn, error)
	// Kubernetes reads the instance pod's log (Stdout destinations) or finds the pod whose
	// shipper sidecar serves its metrics (shipping destinations).
	Kubernetes func() (kubernetes.Interface, error)
	// Pgbench is the pgbench executable.
	Pgbench string
	// ScratchDir is a writable directory.
	ScratchDir string
	// LogDirectory is where the server writes file destinations: FileLogDirectory in a
	// CloudNativePG instance pod.
	LogDirectory string
	// ScriptsDir holds the keys of workload.scripts' ConfigMap, as files (ScriptsDir).
	ScriptsDir string
	// Application is the role workload.scripts and their init run as: the cluster's
	// application owner. Never the superuser: the SQL is the benchmark's editor's, and a
	// superuser's could run programs in the instance pod (COPY ... TO PROGRAM).
	Application Role
	// ConnectAs opens a session as role; libpq's PG* variables describe the server.
	ConnectAs func(context.Context, Role) (*pgx.Conn, error)
}

// Role is a PostgreSQL role and its password.
type Role struct {
	User, Password string
}

// Run performs the requested execution and returns its result.
func Run(ctx context.Context, req Request, env Environment) (v1alpha1.RepeatResult, error) {
	route, err := destination.For(req.Destination)
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	conn, err := env.Connect(ctx)
	if err != nil {
		return v1alpha1.RepeatResult{}, fmt.Errorf("connecting to %s: %w", req.ClusterName, err)
	}
	defer conn.Close(ctx)

	if err := applySettings(ctx, conn, env.Connect, route.PodSettings(env.LogDirectory)); err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	runPgbench := func(ctx context.Context, args, extraEnv []string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, env.Pgbench, args...)
		cmd.Env = append(os.Environ(), extraEnv...)
		return cmd.CombinedOutput()
	}
	runWorkload := runPgbench
	if scripts := req.Workload.Scripts; scripts != nil {
		if runWorkload, err = prepareScripts(ctx, scripts, env, runPgbench); err != nil {
			return v1alpha1.RepeatResult{}, err
		}
	} else if err := ensurePgbenchTables(ctx, conn, req.Workload, runPgbench); err != nil {
		return v1alpha1.RepeatResult{}, err
	}

	nonce, err := workload.RandomNonce()
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	// A fresh tag per attempt: records of a failed earlier attempt never count.
	execution := bench.Execution{
		Destination:  req.Destination,
		Logging:      req.Logging,
		Workload:     req.Workload,
		Clients:      req.Clients,
		Repeat:       req.Repeat,
		DrainTimeout: req.DrainTimeout.Duration,
		Tag:          workload.NewTag(req.Destination.Name, req.Clients, req.Repeat, nonce),
		WarmupTag:    workload.NewWarmupTag(req.Destination.Name, req.Clients, nonce),
		ScriptDir:    env.ScratchDir,
		ScriptsDir:   env.ScriptsDir,
	}
	if execution.Meter, err = podMeter(ctx, env, req); err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	if req.Counter != nil {
		source, closeSource, err := counterSource(ctx, conn, env)
		if err != nil {
			return v1alpha1.RepeatResult{}, err
		}
		defer closeSource()
		execution.Source = source
	}
	if err := bench.WarmUp(ctx, execution, runWorkload); err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	dest, closeDest, err := destinationFor(ctx, req, route, env, execution.Tag)
	if err != nil {
		return v1alpha1.RepeatResult{}, err
	}
	defer closeDest()
	return bench.Run(ctx, execution, runWorkload, dest)
}

// destinationFor returns where the run's records are counted.
func destinationFor(ctx context.Context, req Request, route destination.Route, env Environment, tag string,
) (bench.Destination, func(), error) {
	noop := func() {}
	switch {
	case req.Destination.CountedInNodeAgentsLoki():
		client, err := env.Kubernetes()
		if err != nil {
			return nil, noop, fmt.Errorf("connecting to the Kubernetes API to find the primary pod: %w", err)
		}
		return newNodeAgentRun(ctx, req, client, route.PodFormat(), tag, env.Connect)
	case route.Counted == destination.ContainerLog:
		// The baseline logs no statements, so its records would appear in CloudNativePG's
		// default pipeline: counting there proves the baseline really logged nothing.
		client, err := env.Kubernetes()
		if err != nil {
			return nil, noop, fmt.Errorf("connecting to the Kubernetes API to read the container log: %w", err)
		}
		return newContainerLogRun(ctx, client, req, route.PodFormat(), tag, env.Connect)
	case route.Counted == destination.ServerFiles:
		return serverFiles(ctx, route, env, tag)
	case route.Counted == destination.SyslogReceiver && shipping.UsesRsyslog(req.Destination):
		return newRsyslogRun(ctx, req, route, env, tag)
	case route.Counted == destination.SyslogReceiver:
		// The records are counted where the receiver sidecar puts them; PostgreSQL writes
		// no file to count them in first.
		client, err := env.Kubernetes()
		if err != nil {
			return nil, noop, fmt.Errorf("connecting to the Kubernetes API to find the syslog receiver's pod: %w", err)
		}
		dest, err := newShippedRun(ctx, req, client, tag, nil)
		return dest, noop, err
	}
	// destination.Shipper
	client, err := env.Kubernetes()
	if err != nil {
		return nil, noop, fmt.Errorf("connecting to the Kubernetes API to find the shipper's pod: %w", err)
	}
	// The file the shipper reads is counted too: the first stage of its pipeline.
	written, closeFiles, err := serverFiles(ctx, route, env, tag)
	if err != nil {
		return nil, noop, err
	}
	dest, err := newShippedRun(ctx, req, client, tag, written)
	if err != nil {
		closeFiles()
		return nil, noop, err
	}
	return dest, closeFiles, nil
}

// serverFiles counts the run's records in the files the server writes to
// env.LogDirectory.
func serverFiles(ctx context.Context, route destination.Route, env Environment, tag string,
) (*bench.FileDestination, func(), error) {
	return throughServer(ctx, env, env.LogDirectory,
		func(dir bench.LogDirectory, mark bench.LogMarker) (*bench.FileDestination, error) {
			return bench.NewFileDestination(ctx, dir, mark, route.PodFormat(), tag)
		})
}

// throughServer counts the run's records, with count, in the files of the directory
// path of the server's container, read through a second session: the counter reads
// while the first one stays free.
func throughServer(ctx context.Context, env Environment, path string,
	count func(bench.LogDirectory, bench.LogMarker) (*bench.FileDestination, error),
) (*bench.FileDestination, func(), error) {
	reader, err := env.Connect(ctx)
	if err != nil {
		return nil, func() {}, err
	}
	dest, err := count(serverDirectory{conn: reader, path: path}, bench.RaiseLogWith(reader))
	if err != nil {
		reader.Close(ctx)
		return nil, func() {}, err
	}
	return dest, func() { reader.Close(context.Background()) }, nil
}

// counterSource creates the logbench_counter extension in the application database
// through conn, a superuser's session, and reads it through a session of its own, which
// stays free while the first one works. Neither session carries the run's tag, so the
// statements they make the server log count under no run's name.
func counterSource(ctx context.Context, conn *pgx.Conn, env Environment) (bench.Source, func(), error) {
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS "+v1alpha1.CounterExtension); err != nil {
		return nil, nil, fmt.Errorf("creating the %s extension, which spec.postgres.counter loads: %w",
			v1alpha1.CounterExtension, err)
	}
	reader, err := env.Connect(ctx)
	if err != nil {
		return nil, nil, err
	}
	return bench.SourceOver(reader), func() { reader.Close(context.Background()) }, nil
}

// ensurePgbenchTables initialises the pgbench tables once per cluster: later runs find
// them at the right scale and persistence and leave them alone.
func ensurePgbenchTables(
	ctx context.Context,
	conn *pgx.Conn,
	w v1alpha1.WorkloadSpec,
	runPgbench bench.PgbenchRunner,
) error {
	var branches int64
	var persistence string
	err := conn.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM pgbench_branches),
		       (SELECT relpersistence::text FROM pg_class WHERE oid = 'pgbench_accounts'::regclass)`,
	).Scan(&branches, &persistence)
	wantPersistence := "p"
	if w.UnloggedTables {
		wantPersistence = "u"
	}
	if err == nil && branches == int64(w.Scale) && persistence == wantPersistence {
		return nil
	}
	if output, err := runPgbench(ctx, pgbench.InitArgs(int(w.Scale), w.UnloggedTables), nil); err != nil {
		return fmt.Errorf("pgbench -i: %w\n%s", err, output)
	}
	return nil
}
