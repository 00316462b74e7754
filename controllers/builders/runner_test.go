package builders

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"slices"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/records"
)

// TestPlacementAffinity: Apart only prefers another node than the primary's, so that a
// single-node cluster still runs; SameNode requires the primary's; Anywhere says nothing.
func TestPlacementAffinity(t *testing.T) {
	primaryOf := func(term corev1.PodAffinityTerm) bool {
		selected := term.LabelSelector.MatchLabels
		return term.TopologyKey == corev1.LabelHostname && selected[cloudnativepg.ClusterLabel] == "b-csv" &&
			selected[cloudnativepg.InstanceRoleLabel] == cloudnativepg.PrimaryRole
	}
	apart := placementAffinity(v1alpha1.PlacementApart, "b-csv")
	if preferred := apart.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution; len(preferred) != 1 ||
		!primaryOf(preferred[0].PodAffinityTerm) || apart.PodAffinity != nil ||
		apart.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("Apart: %+v", apart)
	}
	if defaulted := placementAffinity("", "b-csv"); defaulted.PodAntiAffinity == nil {
		t.Errorf("no placement: %+v, want Apart's", defaulted)
	}
	same := placementAffinity(v1alpha1.PlacementSameNode, "b-csv")
	if required := same.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution; len(required) != 1 ||
		!primaryOf(required[0]) || same.PodAntiAffinity != nil {
		t.Errorf("SameNode: %+v", same)
	}
	if anywhere := placementAffinity(v1alpha1.PlacementAnywhere, "b-csv"); anywhere != nil {
		t.Errorf("Anywhere: %+v, want no affinity", anywhere)
	}
}

// TestDestinationPlacementOverridesTheWorkloads: a destination's own placement places its
// runner's pod; the others keep the workload's.
func TestDestinationPlacementOverridesTheWorkloads(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Spec: v1alpha1.LoggingBenchmarkSpec{
		Workload: v1alpha1.WorkloadSpec{Placement: v1alpha1.PlacementApart},
	}}
	for _, tc := range []struct {
		destination v1alpha1.Destination
		want        v1alpha1.Placement
	}{
		{v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}, v1alpha1.PlacementApart},
		{v1alpha1.Destination{Name: "csv-same", Type: v1alpha1.DestinationCSVLog, Placement: v1alpha1.PlacementSameNode},
			v1alpha1.PlacementSameNode},
		{v1alpha1.Destination{Name: "none-any", Type: v1alpha1.DestinationNone, Placement: v1alpha1.PlacementAnywhere},
			v1alpha1.PlacementAnywhere},
	} {
		cluster := "bench-" + tc.destination.Name
		runner, err := Runner(benchmark, tc.destination, RunnerInput{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := runner.Spec.Template.Spec.Affinity, placementAffinity(tc.want, cluster); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: affinity %+v, want %s's %+v", tc.destination.Name, got, tc.want, want)
		}
	}
}

// TestDestinationLoggingReachesServerAndAgent: a destination's own logging sets its
// cluster's parameters, and the runner's request template carries it to the agent, whose expected
// records follow it; a destination without one keeps spec.logging.
func TestDestinationLoggingReachesServerAndAgent(t *testing.T) {
	on, none := true, v1alpha1.StatementNone
	benchmark := &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns"},
		Spec:       v1alpha1.LoggingBenchmarkSpec{Logging: v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll}},
	}
	for _, tc := range []struct {
		destination v1alpha1.Destination
		want        records.Settings
	}{
		{v1alpha1.Destination{Name: "statement", Type: v1alpha1.DestinationCSVLog},
			records.Settings{Statement: v1alpha1.StatementAll, MinDurationStatementMs: -1}},
		{v1alpha1.Destination{Name: "duration", Type: v1alpha1.DestinationCSVLog,
			Logging: &v1alpha1.LoggingOverride{Statement: &none, Duration: &on}},
			records.Settings{Statement: v1alpha1.StatementNone, MinDurationStatementMs: -1, Duration: true}},
	} {
		cluster, err := Cluster(benchmark, tc.destination, "", nil, "")
		if err != nil {
			t.Fatal(err)
		}
		parameters, _, _ := unstructured.NestedStringMap(cluster.Object, "spec", "postgresql", "parameters")
		if parameters["log_statement"] != string(tc.want.Statement) ||
			parameters["log_duration"] != map[bool]string{true: "on", false: "off"}[tc.want.Duration] {
			t.Errorf("%s: cluster parameters %v", tc.destination.Name, parameters)
		}
		runner, err := Runner(benchmark, tc.destination, RunnerInput{})
		if err != nil {
			t.Fatal(err)
		}
		request := runnerRequest(t, runner)
		if got := records.SettingsFor(request.Destination, request.Logging); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: the agent expects records for %+v, want %+v", tc.destination.Name, got, tc.want)
		}
	}
}

// runnerRequest decodes the request template of a runner's agent.
func runnerRequest(t *testing.T, runner *appsv1.Deployment) agent.Request {
	t.Helper()
	for _, env := range runner.Spec.Template.Spec.Containers[0].Env {
		if env.Name == agent.RunnerEnv {
			var request agent.Request
			if err := json.Unmarshal([]byte(env.Value), &request); err != nil {
				t.Fatal(err)
			}
			return request
		}
	}
	t.Fatalf("the runner has no %s", agent.RunnerEnv)
	return agent.Request{}
}

// TestRunDeadlineCountsTheWarmup: a run's deadline covers the warmup, the run and the
// drain, so that neither a long warmup fails a run nor a stuck one outlives its bound.
func TestRunDeadlineCountsTheWarmup(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{
		Workload:     v1alpha1.WorkloadSpec{Duration: metav1.Duration{Duration: time.Minute}, Warmup: metav1.Duration{Duration: 10 * time.Minute}},
		DrainTimeout: metav1.Duration{Duration: 30 * time.Second},
	}
	if got, want := RunDeadline(spec), 10*time.Minute+time.Minute+30*time.Second+runSetupMargin; got != want {
		t.Errorf("deadline %s, want %s", got, want)
	}
}

// TestRunnerRunsOnePodAtATime: a runner is one pod, never two at once, even while its
// pod is replaced, against its own cluster, with a request template that leaves the
// client count and the repeat to each run.
func TestRunnerRunsOnePodAtATime(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bench"}}
	dest := v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}
	runner, err := Runner(benchmark, dest, RunnerInput{ClusterImage: "pg", InstallerImage: "logbench"})
	if err != nil {
		t.Fatal(err)
	}
	if runner.Name != "bench-csv-runner" || *runner.Spec.Replicas != 1 ||
		runner.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("runner %s: %d replicas, strategy %s; want bench-csv-runner, 1, Recreate",
			runner.Name, *runner.Spec.Replicas, runner.Spec.Strategy.Type)
	}
	selector, err := metav1.LabelSelectorAsSelector(runner.Spec.Selector)
	if err != nil || !selector.Matches(labels.Set(runner.Spec.Template.Labels)) {
		t.Errorf("the selector %v misses the runner's pod: %v", runner.Spec.Selector, err)
	}
	if _, err := RunKeyFromLabels(runner.Spec.Template.Labels); err == nil {
		t.Errorf("the runner's pod %v is labelled as one run's", runner.Spec.Template.Labels)
	}
	request := runnerRequest(t, runner)
	if request.ClusterName != "bench-csv" || request.Destination.Name != "csv" || request.Clients != 0 || request.Repeat != 0 {
		t.Errorf("request template %+v, want cluster bench-csv, destination csv, no clients nor repeat", request)
	}
	if command := runner.Spec.Template.Spec.Containers[0].Command; !slices.Equal(command, []string{agentBinary, "agent", "runner"}) {
		t.Errorf("command %v", command)
	}
}

// TestRunnerPullSecrets: the runner's pod pulls the logbench image of its init container
// and the PostgreSQL image of the agent with the operator's pull secrets, and names none
// when the operator has none.
func TestRunnerPullSecrets(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bench"}}
	dest := v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}
	for _, secrets := range [][]corev1.LocalObjectReference{nil, {{Name: "registry"}, {Name: "mirror"}}} {
		runner, err := Runner(benchmark, dest, RunnerInput{
			ClusterImage: "registry.example/postgresql:18", InstallerImage: "registry.example/logbench:1.2.3",
			PullSecrets: secrets,
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := runner.Spec.Template.Spec.ImagePullSecrets; !slices.Equal(got, secrets) {
			t.Errorf("the run's pod pulls with %v, want %v", got, secrets)
		}
	}
}

// TestRunnerMountsTheScripts: with workload.scripts, the runner's pod mounts the listed
// keys of the ConfigMap, and only those, read-only, optionally (the agent names what is
// missing), and gets the application owner's credentials from CloudNativePG's -app
// Secret, for the scripts never run as the superuser; without scripts it gets neither.
func TestRunnerMountsTheScripts(t *testing.T) {
	scripts := &v1alpha1.WorkloadScripts{
		ConfigMap: v1alpha1.ConfigMapReference{Name: "queries"},
		Files:     []v1alpha1.ScriptFile{{Key: "read.sql", Weight: 10}, {Key: "report.sql", Weight: 1}},
		Init:      "schema.sql",
	}
	dest := v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}
	for _, tt := range []struct {
		name    string
		scripts *v1alpha1.WorkloadScripts
	}{{"builtin", nil}, {"scripts", scripts}} {
		t.Run(tt.name, func(t *testing.T) {
			benchmark := &v1alpha1.LoggingBenchmark{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bench"},
				Spec:       v1alpha1.LoggingBenchmarkSpec{Workload: v1alpha1.WorkloadSpec{Scripts: tt.scripts}},
			}
			runner, err := Runner(benchmark, dest, RunnerInput{ClusterImage: "pg", InstallerImage: "logbench"})
			if err != nil {
				t.Fatal(err)
			}
			pod := runner.Spec.Template.Spec
			container := pod.Containers[0]
			env := map[string]*corev1.EnvVarSource{}
			for _, variable := range container.Env {
				env[variable.Name] = variable.ValueFrom
			}
			volume := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == agentScriptsVolume })
			mount := slices.IndexFunc(container.VolumeMounts, func(m corev1.VolumeMount) bool {
				return m.Name == agentScriptsVolume
			})
			if tt.scripts == nil {
				if volume >= 0 || mount >= 0 || env[agent.ApplicationUserEnv] != nil {
					t.Errorf("a builtin workload's pod mounts scripts or gets the application owner: %+v", pod)
				}
				return
			}
			if mount < 0 || !container.VolumeMounts[mount].ReadOnly || container.VolumeMounts[mount].MountPath != agent.ScriptsDir {
				t.Errorf("mounts %+v, want the scripts read-only at %s", container.VolumeMounts, agent.ScriptsDir)
			}
			if volume < 0 {
				t.Fatalf("volumes %+v, want the scripts' ConfigMap", pod.Volumes)
			}
			source := pod.Volumes[volume].ConfigMap
			want := []corev1.KeyToPath{{Key: "read.sql", Path: "read.sql"}, {Key: "report.sql", Path: "report.sql"},
				{Key: "schema.sql", Path: "schema.sql"}}
			if source == nil || source.Name != "queries" || !reflect.DeepEqual(source.Items, want) ||
				source.Optional == nil || !*source.Optional || *source.DefaultMode != 0o444 {
				t.Errorf("scripts volume %+v, want the keys %v of ConfigMap queries, optional, read-only", source, want)
			}
			for variable, key := range map[string]string{
				agent.ApplicationUserEnv: corev1.BasicAuthUsernameKey, agent.ApplicationPasswordEnv: corev1.BasicAuthPasswordKey,
				"PGUSER": corev1.BasicAuthUsernameKey,
			} {
				secret := "bench-csv-app"
				if variable == "PGUSER" {
					secret = "bench-csv-superuser" // the agent's own settings and counts
				}
				from := env[variable]
				if from == nil || from.SecretKeyRef == nil || from.SecretKeyRef.Name != secret || from.SecretKeyRef.Key != key {
					t.Errorf("%s from %+v, want key %s of Secret %s", variable, from, key, secret)
				}
			}
		})
	}
}

// TestRunnerTemplateNamesItsBenchmarkByUID: the runner of a deleted benchmark must tell a
// new benchmark of the same name from its own (internal/runner).
func TestRunnerTemplateNamesItsBenchmarkByUID(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns", UID: "uid-1"}}
	runner, err := Runner(benchmark, v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog}, RunnerInput{})
	if err != nil {
		t.Fatal(err)
	}
	if request := runnerRequest(t, runner); request.Benchmark != "bench" || request.BenchmarkUID != "uid-1" {
		t.Errorf("the runner's template names benchmark %q of UID %q, want bench of uid-1", request.Benchmark, request.BenchmarkUID)
	}
}
