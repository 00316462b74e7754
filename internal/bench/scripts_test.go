package bench

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestRunOfTheWorkloadsOwnScripts: the user's scripts run as pgbench -f file@weight
// from ScriptsDir, no builtin, with the run's tag as application_name; their records are
// the source's count, whatever the logging settings, and without a source the run is
// refused before pgbench, naming the scripts. The warm-up runs the same scripts under its
// own tag.
func TestRunOfTheWorkloadsOwnScripts(t *testing.T) {
	all := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll}
	scripts := &v1alpha1.WorkloadScripts{ConfigMap: v1alpha1.ConfigMapReference{Name: "queries"},
		Files: []v1alpha1.ScriptFile{{Key: "read.sql", Weight: 20}, {Key: "report.sql", Weight: 1}}}
	var args, env []string
	runner := func(_ context.Context, gotArgs, gotEnv []string) ([]byte, error) {
		args, env = gotArgs, gotEnv
		return []byte(selectOnlyOutput), nil
	}

	exec := countedExecution(t, all, nil)
	exec.Workload.Scripts, exec.ScriptsDir = scripts, "/logbench-scripts"
	_, err := Run(context.Background(), exec, runner, &arrivingDestination{})
	if !errors.Is(err, ErrNeedsSource) || !strings.Contains(err.Error(), "workload.scripts") || args != nil {
		t.Errorf("Run of scripts without a source: %v (pgbench ran: %t), want ErrNeedsSource naming them before pgbench",
			err, args != nil)
	}

	exec.Source = &scriptedSource{counts: []int64{0, 1234}, sessions: []int64{0}}
	result, err := Run(context.Background(), exec, runner, &arrivingDestination{step: 1234, total: 1234})
	if err != nil {
		t.Fatal(err)
	}
	command := strings.Join(args, " ")
	if !strings.Contains(command, "-f /logbench-scripts/read.sql@20 -f /logbench-scripts/report.sql@1 ") ||
		strings.Count(command, "-f ") != 2 {
		t.Errorf("pgbench %s, want the two scripts with their weights and nothing else", command)
	}
	if !slices.Contains(env, "PGAPPNAME="+exec.Tag) {
		t.Errorf("pgbench's environment %q does not name the sessions after the run's tag", env)
	}
	exec.WarmupTag, exec.Workload.Warmup.Duration = "lb_csv_c1_warmup_000000000000", time.Second
	if err := WarmUp(context.Background(), exec, runner); err != nil {
		t.Fatal(err)
	}
	if warmup := strings.Join(args, " "); warmup != command || !slices.Contains(env, "PGAPPNAME="+exec.WarmupTag) {
		t.Errorf("warm-up: pgbench %s with %q, want the run's scripts under the warm-up's tag", warmup, env)
	}
	if r := result.Records; r.ExpectedSource != v1alpha1.ExpectedCounted || r.ExpectedIsEstimate || r.Expected != 1234 ||
		r.AccountingError != "" {
		t.Errorf("records %+v, want 1234 counted at the source, exact, no accounting error", r)
	}
}
