package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/agent"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/schedule"
	"github.com/logbench/logbench/internal/shipping"
)

// newBenchmark returns a benchmark with a baseline and one CSVLog destination, at 1 and
// 2 clients, one repeat each: four runs.
func newBenchmark(namespace, name string, cleanup v1alpha1.CleanupPolicy) *v1alpha1.LoggingBenchmark {
	return &v1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
			Baseline:     v1alpha1.BaselineSpec{Enabled: true},
			Workload: v1alpha1.WorkloadSpec{
				Clients:  []int32{1, 2},
				Repeats:  1,
				Duration: metav1.Duration{Duration: 10 * time.Second},
			},
			Cleanup: cleanup,
		},
	}
}

// runTPS is the TPS each destination's agent reports at each client count.
type runTPS map[string]map[int32]float64

// agentEnd is how the agent of a run ends: with the result its message holds, or, unless
// succeeded, failed with the message as the error.
type agentEnd struct {
	message   string
	succeeded bool
}

// playRuns plays CloudNativePG and the runners: it reports the clusters of destinations
// ready, then records each run the operator assigns, after those of played, as ends
// says for its record's name or else with the TPS of its destination and client count,
// until every run of tps has run. It returns the records of every run played, in order.
func playRuns(namespace, benchmark string, destinations []string, tps runTPS, ends map[string]agentEnd,
	played ...string) []string {
	for _, destination := range destinations {
		markClusterReady(namespace, builders.ClusterName(benchmark, destination))
	}
	runs := 0
	for _, byClients := range tps {
		runs += len(byClients)
	}
	for len(played) < runs {
		run := assignedRun(namespace, benchmark, played)
		name := builders.RunRecordName(benchmark, run)
		if end, special := ends[name]; special {
			finishRun(namespace, benchmark, run, end.message, end.succeeded)
		} else {
			finishRun(namespace, benchmark, run, resultMessage(tps[run.Destination][run.Clients]), true)
		}
		played = append(played, name)
	}
	return played
}

// seriesOfNamespace counts the logbench series about benchmarks of a namespace.
func seriesOfNamespace(namespace string) int {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	count := 0
	for _, family := range families {
		for _, metric := range family.GetMetric() {
			for _, label := range metric.GetLabel() {
				if label.GetName() == "namespace" && label.GetValue() == namespace &&
					strings.HasPrefix(family.GetName(), "logbench_") {
					count++
				}
			}
		}
	}
	return count
}

// expectNothingCreatedBy checks that benchmark owns no object of the kinds logbench
// creates, nor labels one as its own.
func expectNothingCreatedBy(benchmark *v1alpha1.LoggingBenchmark) {
	for _, kind := range []schema.GroupVersionKind{
		networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), cloudnativepg.ClusterGVK,
		corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithKind("ServiceAccount"),
		rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), appsv1.SchemeGroupVersion.WithKind("Deployment"),
		corev1.SchemeGroupVersion.WithKind("Service"), batchv1.SchemeGroupVersion.WithKind("Job"),
	} {
		objects := &metav1.PartialObjectMetadataList{}
		objects.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
		Expect(k8sClient.List(context.Background(), objects, client.InNamespace(benchmark.Namespace))).To(Succeed())
		for _, object := range objects.Items {
			Expect(object.OwnerReferences).NotTo(ContainElement(HaveField("UID", benchmark.UID)),
				"%s %s is the benchmark's", kind.Kind, object.Name)
			Expect(object.Labels).NotTo(HaveKeyWithValue(builders.LabelBenchmark, benchmark.Name),
				"%s %s is labelled the benchmark's", kind.Kind, object.Name)
		}
	}
}

func expectPhase(namespace, name string, phase v1alpha1.Phase) *v1alpha1.LoggingBenchmark {
	var benchmark *v1alpha1.LoggingBenchmark
	Eventually(func(g Gomega) {
		benchmark = getBenchmark(g, namespace, name)
		g.Expect(benchmark.Status.Phase).To(Equal(phase))
	}, timeout).Should(Succeed())
	return benchmark
}

// rowsWithRuns is the rows of benchmark's status with the repeats its run records hold.
func rowsWithRuns(benchmark *v1alpha1.LoggingBenchmark) []v1alpha1.Result {
	var records v1alpha1.LoggingBenchmarkRunList
	Expect(k8sClient.List(context.Background(), &records, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(builders.BenchmarkLabels(benchmark.Name)))).To(Succeed())
	for _, row := range benchmark.Status.Results {
		Expect(row.Repeats).To(BeEmpty(), "a status in a cluster holds no run's result")
	}
	return results.WithRepeats(benchmark, records.Items)
}

var _ = Describe("LoggingBenchmark reconciler", func() {
	var (
		ctx       = context.Background()
		namespace string
	)

	BeforeEach(func() {
		namespace = newNamespace()
	})

	It("runs every destination and client count in order and reports the overhead", func() {
		DeferCleanup(startOperator(time.Minute))
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "happy", v1alpha1.CleanupOnSuccess))).To(Succeed())

		By("provisioning every cluster, the baseline's with statement logging off")
		baseline := getCluster(namespace, "happy-baseline")
		Expect(baseline.GetLabels()).To(HaveKeyWithValue(builders.LabelDestination, "baseline"))
		params, _, _ := unstructured.NestedStringMap(baseline.Object, "spec", "postgresql", "parameters")
		Expect(params).To(HaveKeyWithValue("log_statement", "none"))
		superuser, _, _ := unstructured.NestedBool(baseline.Object, "spec", "enableSuperuserAccess")
		Expect(superuser).To(BeTrue())
		csv := getCluster(namespace, "happy-csv")
		params, _, _ = unstructured.NestedStringMap(csv.Object, "spec", "postgresql", "parameters")
		Expect(params).To(HaveKeyWithValue("log_statement", "all"))
		alterSystem, _, _ := unstructured.NestedBool(csv.Object, "spec", "postgresql", "enableAlterSystem")
		Expect(alterSystem).To(BeTrue())
		markClusterReady(namespace, "happy-baseline")
		By("starting the ready cluster's runner while the other cluster starts, assigning no run yet")
		runnerNames := func() []string {
			runners := listRunners(namespace)
			names := make([]string, 0, len(runners))
			for _, runner := range runners {
				names = append(names, runner.Name)
			}
			return names
		}
		Eventually(runnerNames, timeout).Should(Equal([]string{builders.RunnerName("happy", "baseline")}))
		Consistently(func(g Gomega) {
			benchmark := &v1alpha1.LoggingBenchmark{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "happy"}, benchmark)).To(Succeed())
			g.Expect(benchmark.Status.Progress.CurrentSince).To(BeNil())
			g.Expect(runnerNames()).To(HaveLen(1))
		}, time.Second).Should(Succeed())

		By("running the destinations in rounds, one round per client count")
		order := playRuns(namespace, "happy", []string{"csv"},
			runTPS{"baseline": {1: 1000, 2: 2000}, "csv": {1: 800, 2: 1500}}, nil)
		Expect(order[:2]).To(ConsistOf("happy-baseline-c1-r1", "happy-csv-c1-r1"))
		Expect(order[2:]).To(ConsistOf("happy-baseline-c2-r1", "happy-csv-c2-r1"))

		benchmark := expectPhase(namespace, "happy", v1alpha1.PhaseSucceeded)
		status := benchmark.Status
		Expect(status.Results).To(HaveLen(4))
		Expect(status.Progress).To(Equal(v1alpha1.Progress{RunsDone: 4, RunsTotal: 4, Text: "4/4"}))
		Expect(status.Results[2].Destination).To(Equal("csv"))
		Expect(status.Results[2].OverheadPercent).To(HaveValue(BeNumerically("~", 20, 0.01)))
		Expect(status.Results[3].OverheadPercent).To(HaveValue(BeNumerically("~", 25, 0.01)))
		Expect(status.Summary.WorstOverhead).To(Equal("25.0%"))
		rows := rowsWithRuns(benchmark)
		for _, row := range rows {
			Expect(row.Repeats).To(HaveLen(1), "each row's run is recorded")
		}
		Expect(rows[2].Repeats[0].TPS).To(Equal(800.0))
		Expect(rows[0].Repeats[0].ClientNode).To(Equal(clientNode), "the node the agent ran on")
		Expect(rows[0].Repeats[0].ServerNode).To(Equal(serverNode), "the node of the primary")
		Expect(status.Schedule.Runs).To(HaveLen(4))
		for i, run := range status.Schedule.Runs {
			var destination string
			var clients, repeat int
			_, err := fmt.Sscanf(strings.ReplaceAll(run, "/", " "), "%s %d %d", &destination, &clients, &repeat)
			Expect(err).NotTo(HaveOccurred())
			Expect(order[i]).To(Equal(fmt.Sprintf("happy-%s-c%d-r%d", destination, clients, repeat)), "the schedule's order")
		}
		Expect(status.StartTime).NotTo(BeNil())
		Expect(status.CompletionTime).NotTo(BeNil())
		Expect(status.ObservedGeneration).To(Equal(benchmark.Generation))
		Expect(meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
		Expect(meta.IsStatusConditionFalse(status.Conditions, v1alpha1.ConditionDegraded)).To(BeTrue())
		Expect(meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionComplete)).To(BeTrue(),
			"kubectl wait --for=condition=Complete returns")
		Expect(meta.IsStatusConditionFalse(status.Conditions, v1alpha1.ConditionFailed)).To(BeTrue())
		Expect(listRecords(namespace)).To(HaveLen(4))

		By("deleting the runners of a finished benchmark, and its clusters under OnSuccess")
		Eventually(func() []appsv1.Deployment { return listRunners(namespace) }, timeout).Should(BeEmpty())
		Eventually(clusterExists(namespace, "happy-baseline"), timeout).Should(BeFalse())
		Eventually(clusterExists(namespace, "happy-csv"), timeout).Should(BeFalse())
		Eventually(func(g Gomega) {
			for _, dest := range getBenchmark(g, namespace, "happy").Status.Destinations {
				g.Expect(dest.State).To(Equal(v1alpha1.DestinationDeleted))
			}
		}, timeout).Should(Succeed())

		By("exporting the results as metrics")
		Expect(testutil.ToFloat64(resultTPS.WithLabelValues(namespace, "happy", "csv", "CSVLog", "1"))).To(Equal(800.0))
		Expect(
			testutil.ToFloat64(resultOverhead.WithLabelValues(namespace, "happy", "csv", "CSVLog", "2")),
		).To(BeNumerically("~", 25, 0.01))
		Expect(testutil.ToFloat64(runsTotal.WithLabelValues(namespace, "happy", outcomeSucceeded))).To(Equal(4.0))
		Expect(
			testutil.ToFloat64(benchmarkPhase.WithLabelValues(namespace, "happy", string(v1alpha1.PhaseSucceeded))),
		).To(Equal(1.0))

		By("announcing the milestones as events")
		Eventually(func(g Gomega) []string {
			var events corev1.EventList
			g.Expect(k8sClient.List(ctx, &events, client.InNamespace(namespace))).To(Succeed())
			reasons := make([]string, 0, len(events.Items))
			for _, event := range events.Items {
				reasons = append(reasons, event.Reason)
			}
			return reasons
		}, timeout).Should(ContainElements(EventClusterCreated, EventClusterReady, EventRunStarted,
			EventRunSucceeded, EventBenchmarkFinished, EventClustersDeleted))

		By("forgetting the metrics of a deleted benchmark")
		Expect(k8sClient.Delete(ctx, benchmark)).To(Succeed())
		Eventually(func() int { return seriesOfNamespace(namespace) }, timeout).Should(BeZero())
	})

	It("ramps the client count round by round and stops a destination at its knee", func() {
		DeferCleanup(startOperator(time.Minute))
		ramped := newBenchmark(namespace, "ramp", v1alpha1.CleanupOnSuccess)
		ramped.Spec.Workload.Ramp = &v1alpha1.RampSpec{Start: 1, Factor: 2, Max: 4,
			StopWhen: v1alpha1.RampStopConditions{OverheadAbovePercent: ptr.To[int32](30)}}
		ramped.Spec.Workload.Clients = []int32{1, 4} // the API server's default
		Expect(k8sClient.Create(ctx, ramped)).To(Succeed())

		By("planning 2 clients once the round at 1 ended, then nothing more: csv loses 50% at 2")
		order := playRuns(namespace, "ramp", []string{"baseline", "csv"},
			runTPS{"baseline": {1: 1000, 2: 2000}, "csv": {1: 900, 2: 1000}}, nil)
		Expect(order[:2]).To(ConsistOf("ramp-baseline-c1-r1", "ramp-csv-c1-r1"))
		Expect(order[2:]).To(ConsistOf("ramp-baseline-c2-r1", "ramp-csv-c2-r1"))
		benchmark := expectPhase(namespace, "ramp", v1alpha1.PhaseSucceeded)
		Expect(listRecords(namespace)).To(HaveLen(4), "no run at 4 clients")
		Expect(benchmark.Status.Progress.RunsTotal).To(Equal(int32(4)))
		Expect(benchmark.Status.Knees).To(Equal([]v1alpha1.Knee{{Destination: "csv", Clients: 1, StoppedAt: 2,
			Reason: "overhead 50.0% above 30% at 2 clients"}}))
		for _, row := range benchmark.Status.Results {
			Expect(row.Knee).To(Equal(row.Destination == "csv" && row.Clients == 1), results.RowName(row))
		}
		Expect(testutil.ToFloat64(kneeClients.WithLabelValues(namespace, "ramp", "csv"))).To(Equal(1.0))
	})

	It("creates a runner per cluster that references the superuser secret and never holds the password", func() {
		DeferCleanup(startOperator(time.Minute))
		jobs := newBenchmark(namespace, "jobs", v1alpha1.CleanupNever)
		jobs.Spec.Workload.Seed = seedRunningFirst(&jobs.Spec, "baseline")
		Expect(k8sClient.Create(ctx, jobs)).To(Succeed())
		markClusterReady(namespace, "jobs-baseline")
		markClusterReady(namespace, "jobs-csv")
		runner := getRunner(namespace, builders.RunnerName("jobs", "baseline"))
		getRunner(namespace, builders.RunnerName("jobs", "csv"))

		Expect(runner.Labels).To(Equal(map[string]string{
			builders.LabelBenchmark: "jobs", builders.LabelDestination: "baseline", builders.LabelComponent: "runner",
		}))
		Expect(runner.OwnerReferences).To(ConsistOf(HaveField("Name", "jobs")))
		Expect(*runner.OwnerReferences[0].Controller).To(BeTrue())
		Expect(*runner.Spec.Replicas).To(Equal(int32(1)))
		Expect(runner.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))

		pod := runner.Spec.Template.Spec
		By("placing the agent apart from the primary where another node can take it")
		Expect(pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(ConsistOf(
			HaveField("PodAffinityTerm.LabelSelector.MatchLabels", HaveKeyWithValue("cnpg.io/cluster", "jobs-baseline"))))
		Expect(pod.ServiceAccountName).To(Equal(builders.AgentServiceAccountName))
		Expect(pod.ImagePullSecrets).To(Equal(testPullSecrets))
		Expect(pod.InitContainers).To(ConsistOf(HaveField("Image", testAgentImage)))
		Expect(pod.Containers).To(HaveLen(1))
		container := pod.Containers[0]
		Expect(container.Image).To(Equal(testClusterImage))
		Expect(container.Command).To(Equal([]string{"/logbench-bin/logbench", "agent", "runner"}))

		env := map[string]corev1.EnvVar{}
		for _, variable := range container.Env {
			env[variable.Name] = variable
		}
		Expect(env["PGHOST"].Value).To(Equal("jobs-baseline-rw"))
		Expect(env["PGPASSWORD"].Value).To(BeEmpty())
		Expect(env["PGPASSWORD"].ValueFrom.SecretKeyRef.Name).To(Equal("jobs-baseline-superuser"))
		Expect(env["PGPASSWORD"].ValueFrom.SecretKeyRef.Key).To(Equal("password"))
		Expect(env["PGUSER"].ValueFrom.SecretKeyRef.Key).To(Equal("username"))
		request := runnerRequest(env)
		Expect(request.ClusterName).To(Equal("jobs-baseline"))
		Expect(request.Destination.Type).To(Equal(v1alpha1.DestinationNone))

		By("assigning the first run in the status")
		Expect(assignedRun(namespace, "jobs", nil)).To(Equal(results.RunKey{Destination: "baseline", Clients: 1, Repeat: 1}))

		By("meeting the restricted Pod Security Standard of the namespace")
		runPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: runner.Name}, Spec: pod}
		Expect(k8sClient.Create(ctx, runPod, client.DryRunAll)).To(Succeed())

		By("granting the agent read access to the pods of the namespace")
		account := &corev1.ServiceAccount{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: builders.AgentServiceAccountName}, account)).To(Succeed())
		Expect(account.OwnerReferences).To(ConsistOf(HaveField("Name", "jobs")))
		binding := &rbacv1.RoleBinding{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: builders.AgentRoleBindingName}, binding)).To(Succeed())
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: builders.AgentClusterRole}))
		Expect(binding.Subjects).To(ConsistOf(HaveField("Name", builders.AgentServiceAccountName)))
		Expect(binding.OwnerReferences).To(ConsistOf(HaveField("Name", "jobs")))
		By("granting the runners the watch of the benchmarks and the creation of run records")
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: builders.RunnerRoleBindingName}, binding)).To(Succeed())
		Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: builders.RunnerClusterRole}))
		Expect(binding.Subjects).To(ConsistOf(HaveField("Name", builders.AgentServiceAccountName)))

		By("assigning one run at a time")
		Consistently(func(g Gomega) string {
			return getBenchmark(g, namespace, "jobs").Status.Progress.Current
		}, time.Second).Should(Equal("baseline/1/1"))
	})

	It("mounts the user's scripts read-only and runs them as the application owner", func() {
		DeferCleanup(startOperator(time.Minute, allowLogbenchImages))
		scripts := newBenchmark(namespace, "scripts", v1alpha1.CleanupNever)
		scripts.Spec.Baseline.Enabled = false
		scripts.Spec.Postgres.ImageName = "ghcr.io/logbench/postgresql:17-standard-bookworm-counter"
		scripts.Spec.Postgres.Counter = &v1alpha1.CounterSpec{Source: v1alpha1.CounterInOperandImage}
		scripts.Spec.Workload.Builtin = v1alpha1.WorkloadSelectOnly
		scripts.Spec.Workload.Scripts = &v1alpha1.WorkloadScripts{
			ConfigMap: v1alpha1.ConfigMapReference{Name: "queries"}, Init: "schema.sql",
			Files: []v1alpha1.ScriptFile{{Key: "read.sql", Weight: 20}, {Key: "report.sql", Weight: 1}},
		}
		Expect(k8sClient.Create(ctx, scripts)).To(Succeed())
		markClusterReady(namespace, "scripts-csv")
		runner := getRunner(namespace, builders.RunnerName("scripts", "csv"))
		pod := runner.Spec.Template.Spec
		container := pod.Containers[0]

		Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", "scripts"),
			HaveField("ConfigMap.Name", "queries"), HaveField("ConfigMap.Optional", HaveValue(BeTrue())),
			HaveField("ConfigMap.Items", Equal([]corev1.KeyToPath{{Key: "read.sql", Path: "read.sql"},
				{Key: "report.sql", Path: "report.sql"}, {Key: "schema.sql", Path: "schema.sql"}})))))
		Expect(container.VolumeMounts).To(ContainElement(
			corev1.VolumeMount{Name: "scripts", MountPath: agent.ScriptsDir, ReadOnly: true}))
		env := map[string]corev1.EnvVar{}
		for _, variable := range container.Env {
			env[variable.Name] = variable
		}
		for name, key := range map[string]string{agent.ApplicationUserEnv: "username", agent.ApplicationPasswordEnv: "password"} {
			Expect(env[name].Value).To(BeEmpty())
			Expect(env[name].ValueFrom.SecretKeyRef.Name).To(Equal("scripts-csv-app"))
			Expect(env[name].ValueFrom.SecretKeyRef.Key).To(Equal(key))
		}
		Expect(runnerRequest(env).Workload.Scripts).To(Equal(scripts.Spec.Workload.Scripts))

		By("meeting the restricted Pod Security Standard of the namespace")
		runPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: runner.Name}, Spec: pod}
		Expect(k8sClient.Create(ctx, runPod, client.DryRunAll)).To(Succeed())
	})

	It("fails, without taking it over, when an object it would create exists and no benchmark owns it", func() {
		DeferCleanup(startOperator(time.Minute))
		foreign := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: builders.AgentServiceAccountName}}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "foreign", v1alpha1.CleanupNever))).To(Succeed())

		benchmark := expectPhase(namespace, "foreign", v1alpha1.PhaseFailed)
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonForeignObject))
		Expect(degraded.Message).To(ContainSubstring("ServiceAccount " + namespace + "/" + builders.AgentServiceAccountName))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
		Expect(foreign.OwnerReferences).To(BeEmpty())
		By("having created nothing: the agent's names are checked before the first cluster")
		expectNothingCreatedBy(benchmark)
	})

	It("fails, without taking it over, when a Cluster or run record of the name it would create exists", func() {
		DeferCleanup(startOperator(time.Minute))
		foreignCluster := cloudnativepg.NewCluster()
		foreignCluster.SetNamespace(namespace)
		foreignCluster.SetName("taken-csv")
		Expect(unstructured.SetNestedField(foreignCluster.Object, int64(1), "spec", "instances")).To(Succeed())
		Expect(k8sClient.Create(ctx, foreignCluster)).To(Succeed())
		// The destinations before csv have a cluster, a NetworkPolicy and a shipper
		// configuration to create, and the baseline comes first.
		taken := newBenchmark(namespace, "taken", v1alpha1.CleanupNever)
		taken.Spec.Destinations = []v1alpha1.Destination{
			{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar, Shipper: &v1alpha1.ShipperSpec{Output: v1alpha1.OutputStdout}},
			{Name: "csv", Type: v1alpha1.DestinationCSVLog},
		}
		Expect(k8sClient.Create(ctx, taken)).To(Succeed())
		benchmark := expectPhase(namespace, "taken", v1alpha1.PhaseFailed)
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonForeignObject))
		Expect(degraded.Message).To(ContainSubstring("Cluster " + namespace + "/taken-csv exists and no LoggingBenchmark owns it"))
		Expect(getCluster(namespace, "taken-csv").GetOwnerReferences()).To(BeEmpty())
		By("leaving nothing behind: no NetworkPolicy selects the foreign cluster's pods, no other object is left")
		expectNothingCreatedBy(benchmark)

		By("a Deployment in the way of a runner")
		foreignLabels := map[string]string{"app": "other"}
		Expect(k8sClient.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: builders.RunnerName("runner-taken", "csv")},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: foreignLabels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: foreignLabels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "other", Image: testClusterImage}}},
				},
			},
		})).To(Succeed())
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "runner-taken", v1alpha1.CleanupNever))).To(Succeed())
		benchmark = expectPhase(namespace, "runner-taken", v1alpha1.PhaseFailed)
		degraded = meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonForeignObject))
		Expect(degraded.Message).To(ContainSubstring(
			"Deployment %s/runner-taken-csv-runner exists and no LoggingBenchmark owns it", namespace))
		expectNothingCreatedBy(benchmark)
	})

	It("keeps the results of the other runs and reports why a run failed", func() {
		DeferCleanup(startOperator(time.Minute))
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "broken", v1alpha1.CleanupOnSuccess))).To(Succeed())
		playRuns(namespace, "broken", []string{"baseline", "csv"},
			runTPS{"baseline": {1: 1000, 2: 2000}, "csv": {1: 800, 2: 1500}},
			map[string]agentEnd{"broken-baseline-c2-r1": {"pgbench: error: connection to server failed", false}})

		benchmark := expectPhase(namespace, "broken", v1alpha1.PhaseFailed)
		Expect(benchmark.Status.Progress.RunsDone).To(Equal(int32(4)))
		var errors []string
		for _, row := range rowsWithRuns(benchmark) {
			for _, repeat := range row.Repeats {
				errors = append(errors, repeat.Error)
			}
		}
		Expect(errors).To(ContainElement("pgbench: error: connection to server failed"))
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonRunsFailed))
		Expect(degraded.Message).To(ContainSubstring("baseline/2/1"))
		Expect(meta.IsStatusConditionTrue(benchmark.Status.Conditions, v1alpha1.ConditionFailed)).To(BeTrue(),
			"kubectl wait --for=condition=Failed returns")
		Expect(meta.IsStatusConditionFalse(benchmark.Status.Conditions, v1alpha1.ConditionComplete)).To(BeTrue())
		Expect(testutil.ToFloat64(runsTotal.WithLabelValues(namespace, "broken", outcomeFailed))).To(Equal(1.0))

		By("keeping the clusters of a failed benchmark under OnSuccess")
		Consistently(clusterExists(namespace, "broken-csv"), time.Second).Should(BeTrue())
	})

	It("fails a destination whose cluster is not ready in time and goes on with the others", func() {
		DeferCleanup(startOperator(time.Hour))
		slow := newBenchmark(namespace, "slow", v1alpha1.CleanupAlways)
		By("taking the benchmark's ready timeout over the operator's")
		slow.Spec.ClusterReadyTimeout = &metav1.Duration{Duration: 3 * time.Second}
		Expect(k8sClient.Create(ctx, slow)).To(Succeed())
		getCluster(namespace, "slow-baseline")
		playRuns(namespace, "slow", []string{"csv"}, runTPS{"csv": {1: 800, 2: 1500}}, nil)

		benchmark := expectPhase(namespace, "slow", v1alpha1.PhaseFailed)
		Expect(benchmark.Status.Destinations[0].State).To(Equal(v1alpha1.DestinationFailed))
		Expect(benchmark.Status.Destinations[0].Message).To(ContainSubstring("not ready within 3s"))
		Expect(testutil.ToFloat64(runsTotal.WithLabelValues(namespace, "slow", outcomeFailed))).To(Equal(2.0))
		for _, row := range rowsWithRuns(benchmark) {
			if row.Destination == "baseline" {
				Expect(row.Repeats).To(ConsistOf(HaveField("Error", ContainSubstring("not ready within 3s"))),
					"a run of a failed destination is recorded as failed")
			}
		}
		Expect(benchmark.Status.Results).To(ContainElement(SatisfyAll(
			HaveField("Destination", "csv"), HaveField("TPS", 800.0), HaveField("OverheadPercent", BeNil()))))

		By("deleting every cluster under Always")
		Eventually(clusterExists(namespace, "slow-baseline"), timeout).Should(BeFalse())
		Eventually(clusterExists(namespace, "slow-csv"), timeout).Should(BeFalse())
		Eventually(func(g Gomega) {
			states := getBenchmark(g, namespace, "slow").Status.Destinations
			g.Expect(states[0].State).To(Equal(v1alpha1.DestinationFailed))
			g.Expect(states[1].State).To(Equal(v1alpha1.DestinationDeleted))
		}, timeout).Should(Succeed())
	})

	It("writes a FluentBitSidecar's shipper ConfigMap before its cluster, and deletes both on cleanup", func() {
		benchmark := newBenchmark(namespace, "ship", v1alpha1.CleanupAlways)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Destinations = []v1alpha1.Destination{{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar,
			Shipper: &v1alpha1.ShipperSpec{Output: v1alpha1.OutputStdout}}}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		target := shipping.Target{Namespace: namespace, Benchmark: "ship", Destination: benchmark.Spec.Destinations[0]}
		wantConfig, err := shipping.Config(target)
		Expect(err).NotTo(HaveOccurred())

		By("replacing what an operator that stopped before creating the cluster left in the ConfigMap")
		stale := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "ship-fluent-shipper"},
			Data:       map[string]string{shipping.ConfigKey: "stale"},
		}
		Expect(controllerutil.SetControllerReference(benchmark, stale, scheme)).To(Succeed())
		Expect(k8sClient.Create(ctx, stale)).To(Succeed())
		DeferCleanup(startOperator(time.Minute))

		cluster := getCluster(namespace, "ship-fluent")
		configMap := &corev1.ConfigMap{}
		Expect(
			k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "ship-fluent-shipper"}, configMap),
		).To(Succeed())
		Expect(configMap.Data).To(Equal(map[string]string{shipping.ConfigKey: string(wantConfig)}))
		Expect(configMap.Labels).To(Equal(map[string]string{builders.LabelBenchmark: "ship", builders.LabelDestination: "fluent"}))
		Expect(metav1.IsControlledBy(configMap, benchmark)).To(BeTrue())
		// etcd's revisions order the writes: the ConfigMap was written before the Cluster.
		revision := func(object client.Object) int64 {
			n, err := strconv.ParseInt(object.GetResourceVersion(), 10, 64)
			Expect(err).NotTo(HaveOccurred())
			return n
		}
		Expect(revision(configMap)).To(BeNumerically("<", revision(cluster)))

		wantPatch, err := json.Marshal(slices.Concat(shipping.InstancePodPatch(), builders.MeterPatch(testAgentImage),
			shipping.PodPatch(target, "ship-fluent-shipper")))
		Expect(err).NotTo(HaveOccurred())
		Expect(cluster.GetAnnotations()).To(HaveKeyWithValue(shipping.PodPatchAnnotation, string(wantPatch)))
		By("pulling the instances' images, the sidecars' included, with the operator's pull secrets")
		pullSecrets, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "imagePullSecrets")
		Expect(pullSecrets).To(Equal([]any{map[string]any{"name": testPullSecrets[0].Name}}))
		alterSystem, _, _ := unstructured.NestedBool(cluster.Object, "spec", "postgresql", "enableAlterSystem")
		superuser, _, _ := unstructured.NestedBool(cluster.Object, "spec", "enableSuperuserAccess")
		Expect(alterSystem && superuser).To(BeTrue())

		playRuns(namespace, "ship", []string{"fluent"}, runTPS{"fluent": {1: 900, 2: 1700}}, nil)
		benchmark = expectPhase(namespace, "ship", v1alpha1.PhaseSucceeded)
		Expect(
			benchmark.Status.Results,
		).To(ContainElement(SatisfyAll(HaveField("Destination", "fluent"), HaveField("TPS", 900.0))))

		By("deleting the ConfigMap with the cluster under Always")
		Eventually(clusterExists(namespace, "ship-fluent"), timeout).Should(BeFalse())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(configMap), &corev1.ConfigMap{}))
		}, timeout).Should(BeTrue())
	})

	It("gives the agent of a Loki destination Loki's credentials from their Secret and never their values", func() {
		const password = "s3cret-loki-password"
		Expect(k8sClient.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "loki-auth"},
			StringData: map[string]string{"username": "bench", "password": password},
		})).To(Succeed())
		DeferCleanup(startOperator(time.Minute))
		benchmark := newBenchmark(namespace, "creds", v1alpha1.CleanupNever)
		benchmark.Spec.Baseline.Enabled = false
		benchmark.Spec.Destinations = []v1alpha1.Destination{
			{Name: "loki", Type: v1alpha1.DestinationLoki, Loki: &v1alpha1.LokiSpec{
				URL: "http://loki.monitoring:3100", TenantID: "team",
				Auth: &v1alpha1.LokiAuth{
					Basic: &v1alpha1.BasicAuthSecret{SecretName: "loki-auth", UsernameKey: "username", PasswordKey: "password"},
				},
			}},
		}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		markClusterReady(namespace, "creds-loki")
		runner := getRunner(namespace, builders.RunnerName("creds", "loki"))

		env := map[string]corev1.EnvVar{}
		for _, variable := range runner.Spec.Template.Spec.Containers[0].Env {
			env[variable.Name] = variable
		}
		for name, key := range map[string]string{"LOKI_USERNAME": "username", "LOKI_PASSWORD": "password"} {
			Expect(env[name].Value).To(BeEmpty())
			Expect(env[name].ValueFrom.SecretKeyRef.LocalObjectReference.Name).To(Equal("loki-auth"))
			Expect(env[name].ValueFrom.SecretKeyRef.Key).To(Equal(key))
		}
		encodedRunner, err := json.Marshal(runner)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(encodedRunner)).NotTo(ContainSubstring(password))

		By("telling the agent where to count the run's records in Loki")
		request := runnerRequest(env)
		Expect(request.Destination.Loki.URL).To(Equal("http://loki.monitoring:3100"))
		Expect(request.Destination.Loki.TenantID).To(Equal("team"))
		Expect(
			shipping.Target{
				Namespace:   request.Namespace,
				Benchmark:   request.Benchmark,
				Destination: request.Destination,
			}.LokiSelector(),
		).
			To(Equal(fmt.Sprintf(`{job="logbench", namespace=%q, benchmark="creds", destination="loki"}`, namespace)))
	})

	It("neither reruns nor rewrites anything after an operator restart mid-run", func() {
		stop := startOperator(time.Minute)
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "restart", v1alpha1.CleanupNever))).To(Succeed())
		markClusterReady(namespace, "restart-baseline")
		markClusterReady(namespace, "restart-csv")
		first := assignedRun(namespace, "restart", nil)
		finishRun(namespace, "restart", first, resultMessage(1000), true)
		firstName := builders.RunRecordName("restart", first)
		second := assignedRun(namespace, "restart", []string{firstName})
		before := getBenchmark(Default, namespace, "restart")
		Expect(before.Status.Progress.Current).To(Equal(second.String()))
		recordsBefore, runnersBefore := listRecords(namespace), listRunners(namespace)
		stop()

		By("keeping the assignment, its time, the records and the runners as they were")
		DeferCleanup(startOperator(time.Minute))
		Consistently(func(g Gomega) {
			g.Expect(listRecords(namespace)).To(Equal(recordsBefore))
			g.Expect(listRunners(namespace)).To(Equal(runnersBefore))
			g.Expect(getBenchmark(g, namespace, "restart").ResourceVersion).To(Equal(before.ResourceVersion))
		}, 3*time.Second).Should(Succeed())

		finishRun(namespace, "restart", second, resultMessage(2000), true)
		playRuns(namespace, "restart", nil, runTPS{"baseline": {1: 1000, 2: 2000}, "csv": {1: 800, 2: 1500}}, nil,
			firstName, builders.RunRecordName("restart", second))
		benchmark := expectPhase(namespace, "restart", v1alpha1.PhaseSucceeded)
		Expect(benchmark.Status.Results).To(HaveLen(4))
		Expect(listRecords(namespace)).To(HaveLen(4))
		Expect(testutil.ToFloat64(runsTotal.WithLabelValues(namespace, "restart", outcomeSucceeded))).To(Equal(4.0),
			"each run counted once")
	})

	It("records a run failed when its runner does not record it within its deadline, and goes on", func() {
		DeferCleanup(startOperator(time.Minute))
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "stuck", v1alpha1.CleanupNever))).To(Succeed())
		markClusterReady(namespace, "stuck-baseline")
		markClusterReady(namespace, "stuck-csv")
		stuck := assignedRun(namespace, "stuck", nil)

		By("letting the run's deadline pass: its assignment dates back further")
		Eventually(func(g Gomega) {
			benchmark := getBenchmark(g, namespace, "stuck")
			long := metav1.NewTime(time.Now().Add(-builders.RunDeadline(&benchmark.Spec) - time.Minute))
			benchmark.Status.Progress.CurrentSince = &long
			g.Expect(k8sClient.Status().Update(ctx, benchmark)).To(Succeed())
		}, timeout).Should(Succeed())
		expectRunFailed(namespace, "stuck", stuck, "did not record the run within")

		By("assigning the next run anew, with a time of its own")
		next := assignedRun(namespace, "stuck", []string{builders.RunRecordName("stuck", stuck)})
		Expect(time.Since(getBenchmark(Default, namespace, "stuck").Status.Progress.CurrentSince.Time)).
			To(BeNumerically("<", time.Minute))
		playRuns(namespace, "stuck", nil, runTPS{"baseline": {1: 1000, 2: 2000}, "csv": {1: 800, 2: 1500}}, nil,
			builders.RunRecordName("stuck", stuck))
		benchmark := expectPhase(namespace, "stuck", v1alpha1.PhaseFailed)
		Expect(benchmark.Status.Progress.RunsDone).To(Equal(int32(4)))
		Expect(next).NotTo(Equal(stuck))
		Expect(testutil.ToFloat64(runsTotal.WithLabelValues(namespace, "stuck", outcomeFailed))).To(Equal(1.0))
	})

	// runnerPodOfAssignedRun starts a benchmark whose first run is csv's, and plays the
	// kubelet creating its runner's pod, whose status the caller sets with setPodStatus.
	runnerPodOfAssignedRun := func(name string) (assigned results.RunKey, pod *corev1.Pod) {
		DeferCleanup(startOperator(time.Minute))
		benchmark := newBenchmark(namespace, name, v1alpha1.CleanupNever)
		benchmark.Spec.Workload.Seed = seedRunningFirst(&benchmark.Spec, "csv")
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		markClusterReady(namespace, name+"-baseline")
		markClusterReady(namespace, name+"-csv")
		assigned = assignedRun(namespace, name, nil)
		Expect(assigned.Destination).To(Equal("csv"))
		runner := getRunner(namespace, builders.RunnerName(name, "csv"))
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: runner.Name + "-x", Labels: runner.Spec.Template.Labels},
			Spec:       runner.Spec.Template.Spec,
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
		return assigned, pod
	}
	// setPodStatus writes the runner pod's status and brings a pass: the operator watches
	// no pod, but a change of the benchmark brings the pass at once.
	setPodStatus := func(benchmark string, pod *corev1.Pod, status corev1.PodStatus) {
		pod.Status = status
		Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
		Eventually(func(g Gomega) {
			touched := getBenchmark(g, namespace, benchmark)
			touched.Annotations = map[string]string{"pod-version": pod.ResourceVersion}
			g.Expect(k8sClient.Update(ctx, touched)).To(Succeed())
		}, timeout).Should(Succeed())
	}

	It("fails the assigned run, with the kubelet's words, when its runner's pod cannot start", func() {
		stuck, pod := runnerPodOfAssignedRun("unpulled")
		By("playing the kubelet: the runner's image does not exist")
		setPodStatus("unpulled", pod, corev1.PodStatus{Phase: corev1.PodPending,
			ContainerStatuses: []corev1.ContainerStatus{{Name: builders.AgentContainer, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "manifest unknown"},
			}}}})

		expectRunFailed(namespace, "unpulled", stuck, "could not start: container agent: ErrImagePull: manifest unknown")
		By("going on with the next run")
		Expect(assignedRun(namespace, "unpulled", []string{builders.RunRecordName("unpulled", stuck)})).NotTo(Equal(stuck))
	})

	It("fails the assigned run, with the runner's last words, when its runner's pod keeps failing", func() {
		stuck, pod := runnerPodOfAssignedRun("crashing")
		Expect(pod.Spec.Containers[0].TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))

		By("playing the kubelet: the runner exits with an error at each start, its log in its status")
		const lastWords = `error: pgbench not found in the PostgreSQL image: exec: "pgbench": executable file not found in $PATH`
		crashed := func(restarts int32) {
			setPodStatus("crashing", pod, corev1.PodStatus{Phase: corev1.PodRunning,
				ContainerStatuses: []corev1.ContainerStatus{{Name: builders.AgentContainer, RestartCount: restarts,
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						ExitCode: 1, Reason: "Error", Message: `{"level":"info","msg":"starting"}` + "\n" + lastWords + "\n",
						FinishedAt: metav1.Now(),
					}},
				}}})
		}
		crashed(1)
		Consistently(func(g Gomega) {
			g.Expect(getBenchmark(g, namespace, "crashing").Status.Progress.RunsDone).To(BeZero(),
				"a runner that failed once is restarted, not given up")
		}, 2*time.Second).Should(Succeed())

		crashed(runnerFailures)
		expectRunFailed(namespace, "crashing", stuck,
			"the runner's pod "+pod.Name+" failed 3 times: container agent exited with code 1: "+lastWords)
	})

	It("reports a run whose records cannot all be right as Degraded", func() {
		DeferCleanup(startOperator(time.Minute))
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "overcount", v1alpha1.CleanupNever))).To(Succeed())
		overcount, err := json.Marshal(v1alpha1.RepeatResult{
			TPS: 800, LatencyAvgMs: 1.25, Transactions: 8000,
			Records: v1alpha1.Records{Expected: 8000, Delivered: 8010, Dropped: ptr.To[int64](-10),
				AccountingError: "8010 records arrived but the server can have emitted at most 8000 for this run"},
		})
		Expect(err).NotTo(HaveOccurred())
		playRuns(namespace, "overcount", []string{"baseline", "csv"},
			runTPS{"baseline": {1: 1000, 2: 2000}, "csv": {1: 800, 2: 1500}},
			map[string]agentEnd{"overcount-csv-c1-r1": {string(overcount), true}})

		benchmark := expectPhase(namespace, "overcount", v1alpha1.PhaseSucceeded)
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonAccountingError))
		Expect(degraded.Message).To(ContainSubstring("csv/1"))
		Expect(benchmark.Status.Summary.DropsUnknown).To(Equal([]string{"csv/1"}))
		Expect(benchmark.Status.Summary.Dropped).To(Equal("0, 1 row unknown"))
	})

	It("fails a benchmark whose cluster names CloudNativePG would reject", func() {
		DeferCleanup(startOperator(time.Minute))
		name := "a-benchmark-name-far-too-long-for-cloudnativepg"
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, name, v1alpha1.CleanupNever))).To(Succeed())
		benchmark := expectPhase(namespace, name, v1alpha1.PhaseFailed)
		degraded := meta.FindStatusCondition(benchmark.Status.Conditions, v1alpha1.ConditionDegraded)
		Expect(degraded.Reason).To(Equal(v1alpha1.ReasonInvalidSpec))
		Expect(degraded.Message).To(ContainSubstring("shorten the benchmark name"))
		Consistently(clusterExists(namespace, name+"-baseline"), time.Second).Should(BeFalse())
	})

	It("writes the status of a pass that failed, and advances observedGeneration only on success", func() {
		Expect(k8sClient.Create(ctx, newBenchmark(namespace, "flaky", v1alpha1.CleanupNever))).To(Succeed())
		withWatch, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		refusingClusters := interceptor.NewClient(withWatch, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if obj.GetObjectKind().GroupVersionKind() == cloudnativepg.ClusterGVK {
					return errors.New("the API server is unavailable")
				}
				return c.Create(ctx, obj, opts...)
			},
		})
		reconciler := func(c client.Client) *LoggingBenchmarkReconciler {
			return &LoggingBenchmarkReconciler{Client: c, APIReader: c, Scheme: scheme, Recorder: record.NewFakeRecorder(100),
				AgentImage: testAgentImage, ClusterReadyTimeout: time.Minute}
		}
		request := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: "flaky"}}

		By("failing to create the first cluster")
		_, err = reconciler(refusingClusters).Reconcile(ctx, request)
		Expect(err).To(MatchError(ContainSubstring("the API server is unavailable")))
		benchmark := getBenchmark(Default, namespace, "flaky")
		Expect(benchmark.Status.StartTime).NotTo(BeNil())
		Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhasePending))
		Expect(benchmark.Status.Progress.Text).To(Equal("0/4"))
		Expect(benchmark.Status.Destinations).To(HaveLen(2))
		Expect(benchmark.Status.ObservedGeneration).To(BeZero())

		By("creating it on the next pass")
		_, err = reconciler(k8sClient).Reconcile(ctx, request)
		Expect(err).NotTo(HaveOccurred())
		benchmark = getBenchmark(Default, namespace, "flaky")
		Expect(benchmark.Status.Phase).To(Equal(v1alpha1.PhaseProvisioning))
		Expect(benchmark.Status.ObservedGeneration).To(Equal(benchmark.Generation))
	})
})

// expectRunFailed waits for the record of a run that failed with an error holding reason.
func expectRunFailed(namespace, benchmark string, run results.RunKey, reason string) {
	Eventually(func(g Gomega) {
		record := &v1alpha1.LoggingBenchmarkRun{}
		g.Expect(k8sClient.Get(context.Background(),
			client.ObjectKey{Namespace: namespace, Name: builders.RunRecordName(benchmark, run)}, record)).To(Succeed())
		g.Expect(record.Status.Error).To(ContainSubstring(reason))
	}, timeout).Should(Succeed())
}

// runnerRequest decodes the request template of a runner's agent from its environment.
func runnerRequest(env map[string]corev1.EnvVar) agent.Request {
	var request agent.Request
	Expect(json.Unmarshal([]byte(env[agent.RunnerEnv].Value), &request)).To(Succeed())
	return request
}

// seedRunningFirst returns a seed whose schedule starts with destination.
func seedRunningFirst(spec *v1alpha1.LoggingBenchmarkSpec, destination string) *int64 {
	for seed := range int64(100) {
		if schedule.Plan(spec, seed, nil)[0].Destination == destination {
			return &seed
		}
	}
	Fail("no seed of 100 runs " + destination + " first")
	return nil
}
