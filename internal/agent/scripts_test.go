package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestScriptsRunAsTheApplicationOwner: the scripts' pgbench gets the application
// owner's PGUSER and PGPASSWORD after the pod's superuser's, so that they win, and the
// run's own variables (its tag as PGAPPNAME) after those.
func TestScriptsRunAsTheApplicationOwner(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "read.sql"), []byte("SELECT 1;\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	scripts := &v1alpha1.WorkloadScripts{ConfigMap: v1alpha1.ConfigMapReference{Name: "queries"},
		Files: []v1alpha1.ScriptFile{{Key: "read.sql", Weight: 1}}}
	var gotEnv []string
	superuser := func(_ context.Context, _, extraEnv []string) ([]byte, error) {
		gotEnv = append([]string{"PGUSER=postgres", "PGPASSWORD=superuser"}, extraEnv...)
		return nil, nil
	}
	env := Environment{ScriptsDir: dir, Application: Role{User: "app", Password: "app-password"}}
	run, err := prepareScripts(context.Background(), scripts, env, superuser)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run(context.Background(), nil, []string{"PGAPPNAME=lb-tag"}); err != nil {
		t.Fatal(err)
	}
	last := func(name string) string {
		for _, variable := range slices.Backward(gotEnv) {
			if value, ok := strings.CutPrefix(variable, name+"="); ok {
				return value
			}
		}
		return ""
	}
	if last("PGUSER") != "app" || last("PGPASSWORD") != "app-password" || last("PGAPPNAME") != "lb-tag" {
		t.Errorf("pgbench's environment %q: want the application owner and the run's tag last", gotEnv)
	}
}

// TestMissingScriptsAreNamed: a key the pod does not hold (its ConfigMap is missing, or
// lacks the key) fails the run before anything runs, naming the ConfigMap and the key;
// a pod without the application owner's credentials fails too.
func TestMissingScriptsAreNamed(t *testing.T) {
	scripts := &v1alpha1.WorkloadScripts{ConfigMap: v1alpha1.ConfigMapReference{Name: "queries"},
		Files: []v1alpha1.ScriptFile{{Key: "read.sql", Weight: 1}}, Init: "schema.sql"}
	ran := false
	runPgbench := func(context.Context, []string, []string) ([]byte, error) {
		ran = true
		return []byte("pgbench ran"), errors.New("pgbench must not run")
	}
	for _, tt := range []struct {
		name string
		env  Environment
		want []string
	}{
		{"missing key", Environment{ScriptsDir: t.TempDir(), Application: Role{User: "app"}},
			[]string{"ConfigMap queries", "no key read.sql"}},
		{"no application owner", Environment{ScriptsDir: t.TempDir()},
			[]string{"application owner", ApplicationUserEnv}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := prepareScripts(context.Background(), scripts, tt.env, runPgbench)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("prepareScripts: %v, want an error naming %q", err, want)
				}
			}
			if ran {
				t.Error("pgbench ran")
			}
		})
	}
}
