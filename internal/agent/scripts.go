package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
)

// ScriptsDir is where a run's pod mounts the keys of workload.scripts' ConfigMap.
const ScriptsDir = "/logbench-scripts"

// The environment variables of the application owner's credentials in a run's pod, from
// CloudNativePG's <cluster>-app Secret; set only when the workload has scripts.
const (
	ApplicationUserEnv     = "LOGBENCH_APP_USER"
	ApplicationPasswordEnv = "LOGBENCH_APP_PASSWORD"
)

// prepareScripts checks that the run's pod holds every key of workload.scripts, runs
// their init once per cluster as the application owner, and returns what runs pgbench
// as that owner.
func prepareScripts(
	ctx context.Context, scripts *v1alpha1.WorkloadScripts, env Environment, runPgbench bench.PgbenchRunner,
) (bench.PgbenchRunner, error) {
	if env.Application.User == "" {
		return nil, fmt.Errorf("spec.workload.scripts run as the cluster's application owner, whose credentials "+
			"(%s, %s) the run's pod does not have", ApplicationUserEnv, ApplicationPasswordEnv)
	}
	for _, key := range scripts.Keys() {
		if _, err := os.Stat(filepath.Join(env.ScriptsDir, string(key))); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("spec.workload.scripts: the ConfigMap %s in the benchmark's namespace does "+
					"not exist or has no key %s", scripts.ConfigMap.Name, key)
			}
			return nil, fmt.Errorf("spec.workload.scripts: %w", err)
		}
	}
	if scripts.Init != "" {
		init, err := os.ReadFile(filepath.Join(env.ScriptsDir, string(scripts.Init)))
		if err != nil {
			return nil, fmt.Errorf("spec.workload.scripts.init: %w", err)
		}
		conn, err := env.ConnectAs(ctx, env.Application)
		if err != nil {
			return nil, fmt.Errorf("connecting as the application owner %s: %w", env.Application.User, err)
		}
		defer conn.Close(ctx)
		if err := bench.InitScripts(ctx, conn, string(init)); err != nil {
			return nil, err
		}
	}
	return runAs(env.Application, runPgbench), nil
}

// runAs runs pgbench as role: its PGUSER and PGPASSWORD come after the pod's superuser's
// in pgbench's environment, and os/exec keeps the last value of a variable given twice.
func runAs(role Role, runPgbench bench.PgbenchRunner) bench.PgbenchRunner {
	return func(ctx context.Context, args, extraEnv []string) ([]byte, error) {
		roleEnv := make([]string, 0, 2+len(extraEnv))
		roleEnv = append(roleEnv, "PGUSER="+role.User, "PGPASSWORD="+role.Password)
		return runPgbench(ctx, args, append(roleEnv, extraEnv...))
	}
}
