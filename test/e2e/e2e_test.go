//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers"
	"github.com/logbench/logbench/controllers/builders"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/results"
)

const (
	benchmarkNamespace = "logbench-e2e"
	// benchmarkTimeout covers five clusters' start-up and ten 10 s runs with their
	// drains on a 2-core machine.
	benchmarkTimeout = 20 * time.Minute
	// typoImage is a shipper image no registry holds, as a typo makes.
	typoImage = "logbench.local/no-such-fluent-bit:0"
	// shortPodStartTimeout is the podStartTimeout of the specs whose pod cannot start:
	// they fail in seconds rather than the default 2 minutes.
	shortPodStartTimeout = 20 * time.Second
)

var _ = Describe("logbench", Ordered, func() {
	var benchmark *benchv1alpha1.LoggingBenchmark

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			printDiagnostics(benchmark)
		}
	})

	It("is installed: CRD established, operator Ready, metrics served", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: "loggingbenchmarks.bench.logbench.io"}, crd)).To(Succeed())
			g.Expect(crdEstablished(crd)).To(BeTrue(), "CRD not Established")
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())

		Eventually(func(g Gomega) {
			deployment := &appsv1.Deployment{}
			key := client.ObjectKey{Namespace: operatorNamespace, Name: "logbench"}
			g.Expect(k8sClient.Get(ctx, key, deployment)).To(Succeed())
			g.Expect(deployment.Status.ReadyReplicas).To(BeNumerically(">=", 1), "operator not Ready")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(scrapeMetrics(ctx)).To(ContainSubstring("controller_runtime_reconcile_total"))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		_, err := scrapeMetricsWithoutToken(ctx)
		Expect(err).To(HaveOccurred(), "the operator served its metrics to a client without a token")
	})

	It("rejects bad input with the documented message", func(ctx SpecContext) {
		cases := []struct {
			name    string
			mutate  func(*benchv1alpha1.LoggingBenchmark)
			message string
		}{
			{
				name: "reserved baseline name",
				mutate: func(b *benchv1alpha1.LoggingBenchmark) {
					b.Spec.Destinations = append(b.Spec.Destinations,
						benchv1alpha1.Destination{Name: "baseline", Type: benchv1alpha1.DestinationCSVLog})
				},
				message: "the destination name 'baseline' is reserved",
			},
			{
				name: "format on a file destination",
				mutate: func(b *benchv1alpha1.LoggingBenchmark) {
					b.Spec.Destinations[0].Format = benchv1alpha1.FormatJSONLog
				},
				message: "format applies only to destinations of type Stdout",
			},
			{
				name: "logging parameters in postgres.parameters",
				mutate: func(b *benchv1alpha1.LoggingBenchmark) {
					b.Spec.Postgres.Parameters = map[string]benchv1alpha1.ParameterValue{"log_destination": "stderr"}
				},
				message: "are set by logbench per destination: use spec.destinations",
			},
		}
		for _, c := range cases {
			invalid := newBenchmark("invalid")
			c.mutate(invalid)
			err := k8sClient.Create(ctx, invalid)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: want Invalid, got %v", c.name, err)
			Expect(err.Error()).To(ContainSubstring(c.message), c.name)
		}
	})

	It("runs a real benchmark on PostgreSQL 18 to Succeeded with consistent records", func(ctx SpecContext) {
		benchmark = newBenchmark("e2e")
		// The other specs run PostgreSQL 15.
		benchmark.Spec.Postgres.ImageName = postgres18Image
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, benchmark))).To(Succeed())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), &benchv1alpha1.LoggingBenchmark{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(BeTrue())
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())

		By("waiting with kubectl wait --for=condition=Complete, as a script waits for a Job")
		waitWithKubectl(ctx, benchmark)

		spec := benchmark.Spec
		Expect(benchmark.Status.Results).To(HaveLen(len(spec.EffectiveDestinations()) * len(spec.Workload.Clients)))

		By("running the destinations in rounds, one per client count, as the schedule says")
		schedule := benchmark.Status.Schedule
		Expect(schedule).NotTo(BeNil())
		Expect(schedule.Runs).To(HaveLen(int(benchmark.Status.Progress.RunsTotal)))
		// Each run is recorded as it ends, seconds after the one before.
		records := &benchv1alpha1.LoggingBenchmarkRunList{}
		Expect(k8sClient.List(ctx, records, client.InNamespace(benchmarkNamespace),
			client.MatchingLabels{builders.LabelBenchmark: benchmark.Name})).To(Succeed())
		slices.SortStableFunc(records.Items, func(a, b benchv1alpha1.LoggingBenchmarkRun) int {
			return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
		})
		Expect(records.Items).To(HaveLen(len(schedule.Runs)))
		destinations := len(spec.EffectiveDestinations())
		for i, run := range schedule.Runs {
			recorded := records.Items[i].Spec
			Expect(fmt.Sprintf("%s/%d/%d", recorded.Destination, recorded.Clients, recorded.Repeat)).To(Equal(run),
				"run %d of the schedule", i)
			Expect(recorded.Clients).To(Equal(spec.Workload.Clients[i/destinations]),
				"run %d is in the round of its client count", i)
		}

		By("removing the runners of the finished benchmark")
		Eventually(func(g Gomega) {
			runners := &appsv1.DeploymentList{}
			g.Expect(k8sClient.List(ctx, runners, client.InNamespace(benchmarkNamespace),
				client.MatchingLabels(builders.BenchmarkRunnerLabels(benchmark.Name)))).To(Succeed())
			g.Expect(runners.Items).To(BeEmpty(), "runners left")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		for _, row := range rowsWithRuns(ctx, benchmark) {
			what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
			Expect(row.TPS).To(BeNumerically(">", 0), what)
			for _, repeat := range row.Repeats {
				Expect(repeat.ClientNode).NotTo(BeEmpty(), "%s: the node of the pgbench pod", what)
				Expect(repeat.ServerNode).NotTo(BeEmpty(), "%s: the node of the primary", what)
			}
			records := row.Records
			Expect(records.AccountingError).To(BeEmpty(), what)
			Expect(records.Delivered).To(BeNumerically(">=", 0), what)
			Expect(records.Delivered).To(BeNumerically("<=", records.Expected), what)
			switch row.Type {
			case benchv1alpha1.DestinationNone:
				Expect(records.Expected).To(BeZero(), what)
			case benchv1alpha1.DestinationCSVLog, benchv1alpha1.DestinationStderr, benchv1alpha1.DestinationJSONLog:
				Expect(records.Expected).To(BeNumerically(">", 0), what)
				Expect(records.Delivered).To(Equal(records.Expected), "%s: a file destination loses nothing", what)
				// A record holds at least its time, the run's tag and the statement.
				Expect(row.LogBytesPerRecord).To(HaveValue(BeNumerically(">=", 60)), "%s: log bytes per record", what)
				Expect(row.LogGigabytesPerHour).To(HaveValue(BeNumerically(">", 0)), "%s: log volume an hour", what)
			default:
				Expect(records.Expected).To(BeNumerically(">", 0), what)
			}
		}

		By("checking the Stdout rows against the container log, which the kubelet rotates at 10Mi")
		// The kubelet's default containerLogMaxSize, which the e2e clusters keep.
		const kubeletContainerLogMaxSize = 10 << 20
		formats := map[string]benchv1alpha1.LogFormat{}
		for _, destination := range spec.Destinations {
			formats[destination.Name] = destination.Format
		}
		caughtUp := 0
		for _, row := range rowsWithRuns(ctx, benchmark) {
			if row.Type != benchv1alpha1.DestinationStdout {
				continue
			}
			what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
			log := primaryLog(ctx, benchmark, row.Destination)
			inNewestFile := recordsOfRun(log, row.Destination, row.Clients)
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d records counted, %d in the newest container log file (%d bytes)\n",
				what, row.Records.Delivered, row.Records.Expected, inNewestFile, len(log))
			if formats[row.Destination] != benchv1alpha1.FormatJSONLog {
				// CloudNativePG samples its csvlog records on stdout: a small log, which
				// stays in one file and holds what the agent counted. The row compares its
				// loss with the sampler's.
				Expect(inNewestFile).To(Equal(row.Records.Delivered), "%s: delivered differs from the container log", what)
				expectSamplerVerdict(row)
				// The sampled stream's drain ends once a marker the server logged after
				// the run reaches it, or, should none pass the sampler, after a quiet period.
				for _, repeat := range row.Repeats {
					_, _ = fmt.Fprintf(GinkgoWriter, "%s, repeat %d: drain %.1f s, %s\n",
						what, repeat.Repeat, repeat.DrainSeconds, repeat.DrainEnd)
					if repeat.DrainEnd == benchv1alpha1.DrainSettled {
						caughtUp++
					}
				}
				continue
			}
			// jsonlog lines pass through unsampled: the agent follows the log through the
			// kubelet's rotations and counts every record, while the API serves only the
			// newest file. The kubelet's stream can skip lines at a rotation (on a loaded
			// node, most of a run's): logbench could not see them, so they are unverified,
			// never dropped.
			if row.Records.Delivered != row.Records.Expected {
				Expect(row.Records.Unverified).To(Equal(row.Records.Expected-row.Records.Delivered),
					"%s: records missing from the container log stream without a rotation", what)
				Expect(row.Records.UnverifiedReason).To(ContainSubstring("rotated the container log"), what)
				Expect(row.Records.Dropped).To(HaveValue(BeZero()), "%s: what logbench could not see is no drop", what)
			} else {
				Expect(row.Records.Unverified).To(BeZero(), "%s: nothing unverified when every record was read", what)
			}
			if row.Clients != spec.Workload.Clients[0] || inNewestFile < row.Records.Delivered {
				continue
			}
			// How much the runs write depends on the node's speed: on a loaded one the log
			// of both runs can stay under the size the kubelet rotates at. A larger one
			// is rotated at the kubelet's next check, every 10 s.
			if len(log) < kubeletContainerLogMaxSize {
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: the runs wrote less than the kubelet's 10Mi, so no rotation "+
					"fell within them\n", what)
				Expect(inNewestFile).To(Equal(row.Records.Delivered),
					"%s: delivered differs from the container log, which was never rotated", what)
				continue
			}
			Eventually(func() int64 {
				return recordsOfRun(primaryLog(ctx, benchmark, row.Destination), row.Destination, row.Clients)
			}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(2*time.Second).
				Should(BeNumerically("<", row.Records.Delivered), "%s: the container log outgrew 10Mi and was not rotated", what)
		}
		Expect(caughtUp).To(BeNumerically(">", 0), "no sampled stdout drain ended on a marker")

		By("checking that every result row is on the operator's metrics endpoint")
		Eventually(func(g Gomega) {
			families, err := scrapeMetricFamilies(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			for _, row := range benchmark.Status.Results {
				what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
				labels := map[string]string{"namespace": benchmark.Namespace, "benchmark": benchmark.Name,
					"destination": row.Destination, "clients": fmt.Sprint(row.Clients)}
				g.Expect(gaugeValue(families, "logbench_result_tps", labels)).To(BeNumerically("~", row.TPS, 0.01), what)
				g.Expect(gaugeValue(families, "logbench_result_records_expected", labels)).
					To(BeNumerically("==", row.Records.Expected), what)
				g.Expect(gaugeValue(families, "logbench_result_records_delivered", labels)).
					To(BeNumerically("==", row.Records.Delivered), what)
				if row.LogBytesPerRecord != nil {
					g.Expect(gaugeValue(families, "logbench_result_log_bytes_per_record", labels)).
						To(BeNumerically("~", *row.LogBytesPerRecord, 0.01), what)
				}
			}
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	})

	It("measures CloudNativePG's stdout at the instance manager's debug level beside the default one",
		func(ctx SpecContext) {
			Expect(benchmark).NotTo(BeNil(), "needs the benchmark of the previous spec: its stdout rows are the default level")
			debug := newBenchmark("stdout-debug")
			debug.Spec.Postgres.ImageName = benchmark.Spec.Postgres.ImageName
			debug.Spec.Postgres.InstanceManagerLogLevel = "debug"
			debug.Spec.Baseline.Enabled = false
			debug.Spec.Destinations = []benchv1alpha1.Destination{{Name: "stdout", Type: benchv1alpha1.DestinationStdout}}
			// One client count: its row stands beside the default level's.
			debug.Spec.Workload.Clients = []int32{1}
			createForThisSpec(ctx, debug)
			DeferCleanup(func() {
				if CurrentSpecReport().Failed() {
					printDiagnostics(debug)
				}
			})
			waitForPhase(ctx, debug, benchv1alpha1.PhaseSucceeded)

			By("running the instance manager of the debug benchmark's cluster at debug")
			Expect(debug.Status.Destinations).To(HaveLen(1))
			cluster := cloudnativepg.NewCluster()
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmarkNamespace,
				Name: debug.Status.Destinations[0].ClusterName}, cluster)).To(Succeed())
			logLevel, _, err := unstructured.NestedString(cluster.Object, "spec", "logLevel")
			Expect(err).NotTo(HaveOccurred())
			Expect(logLevel).To(Equal("debug"))

			By("counting both levels' rows and reporting the sampler's verdict on each")
			defaults := map[int32]benchv1alpha1.Result{}
			for _, row := range benchmark.Status.Results {
				if row.Destination == "stdout" {
					defaults[row.Clients] = row
				}
			}
			Expect(debug.Status.Results).To(HaveLen(len(debug.Spec.Workload.Clients)))
			for _, atDebug := range debug.Status.Results {
				atDefault, found := defaults[atDebug.Clients]
				Expect(found).To(BeTrue(), "no default-level stdout row at %d clients", atDebug.Clients)
				for _, row := range []benchv1alpha1.Result{atDefault, atDebug} {
					Expect(row.Records.Expected).To(BeNumerically(">", 0), row.Destination)
					Expect(row.Records.Delivered).To(BeNumerically(">", 0), row.Destination)
					Expect(row.Records.AccountingError).To(BeEmpty(), row.Destination)
					records := row.Records
					Expect(records.Delivered+records.ArrivedLate+records.Unverified+records.KnownDropped()).
						To(Equal(records.Expected), "%s: delivered, late, unverified and dropped make up the expected",
							row.Destination)
					expectSamplerVerdict(row)
				}
			}
		})

	It("removes the benchmark's clusters, runners and PVCs when the benchmark is deleted", func(ctx SpecContext) {
		Expect(benchmark).NotTo(BeNil(), "needs the benchmark of the previous spec")
		clusterNames := map[string]bool{}
		for _, destination := range benchmark.Status.Destinations {
			clusterNames[destination.ClusterName] = true
		}
		Expect(k8sClient.Delete(ctx, benchmark)).To(Succeed())

		selector := client.MatchingLabels{builders.LabelBenchmark: benchmark.Name}
		Eventually(func(g Gomega) {
			clusters := &unstructured.UnstructuredList{}
			clusters.SetGroupVersionKind(cloudnativepg.ClusterGVK.GroupVersion().WithKind("ClusterList"))
			g.Expect(k8sClient.List(ctx, clusters, client.InNamespace(benchmarkNamespace), selector)).To(Succeed())
			g.Expect(clusters.Items).To(BeEmpty(), "clusters left")

			runners := &appsv1.DeploymentList{}
			g.Expect(k8sClient.List(ctx, runners, client.InNamespace(benchmarkNamespace),
				client.MatchingLabels(builders.BenchmarkRunnerLabels(benchmark.Name)))).To(Succeed())
			g.Expect(runners.Items).To(BeEmpty(), "runners left")

			claims := &corev1.PersistentVolumeClaimList{}
			g.Expect(k8sClient.List(ctx, claims, client.InNamespace(benchmarkNamespace))).To(Succeed())
			for _, claim := range claims.Items {
				g.Expect(clusterNames).NotTo(HaveKey(claim.Labels["cnpg.io/cluster"]), "PVC %s left", claim.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	})

	It("fails a destination whose image no registry holds within its podStartTimeout, with the pull error, "+
		"and completes the others",
		Label("lifecycle"), func(ctx SpecContext) {
			unready := newBenchmark("unready")
			benchmark = unready
			unready.Spec.Baseline.Enabled = false
			// A shipper image no registry holds, as a typo makes: the instance pod never starts.
			unready.Spec.Destinations = []benchv1alpha1.Destination{
				{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog},
				{Name: "typo", Type: benchv1alpha1.DestinationFluentBitSidecar, Shipper: &benchv1alpha1.ShipperSpec{
					Kind: benchv1alpha1.ShipperFluentBit, Image: typoImage, Output: benchv1alpha1.OutputNull,
				}},
			}
			unready.Spec.Workload.Clients = []int32{1}
			unready.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
			// Not the ready timeout: the pull error fails the destination, once the kubelet has
			// retried for podStartTimeout (a pull error that says the image does not exist
			// fails it at once; this machine's resolver answers a temporary failure).
			unready.Spec.ClusterReadyTimeout = &metav1.Duration{Duration: benchmarkTimeout}
			unready.Spec.PodStartTimeout = &metav1.Duration{Duration: shortPodStartTimeout}
			unready.Spec.Cleanup = benchv1alpha1.CleanupAlways
			createForThisSpec(ctx, unready)

			By("seeing the instance pod that cannot pull its shipper's image")
			var instance corev1.Pod
			Eventually(func(g Gomega) {
				pods := &corev1.PodList{}
				g.Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmarkNamespace),
					client.MatchingLabels{cloudnativepg.ClusterLabel: "unready-typo", cloudnativepg.PodRoleLabel: cloudnativepg.InstanceRole})).To(Succeed())
				g.Expect(pods.Items).NotTo(BeEmpty())
				instance = pods.Items[0]
			}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(2 * time.Second).Should(Succeed())

			By("failing the destination within podStartTimeout of the pod's creation, with the pull error")
			// The pass that sees it may come a few seconds later.
			deadline := time.Until(instance.CreationTimestamp.Add(shortPodStartTimeout + 30*time.Second))
			var typo benchv1alpha1.DestinationStatus
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(unready), unready)).To(Succeed())
				for _, state := range unready.Status.Destinations {
					if state.Name == "typo" {
						typo = state
					}
				}
				g.Expect(typo.State).To(Equal(benchv1alpha1.DestinationFailed), typo.Message)
			}).WithContext(ctx).WithTimeout(deadline).WithPolling(2 * time.Second).Should(Succeed())
			_, _ = fmt.Fprintf(GinkgoWriter, "typo failed %s after its instance pod's creation: %s\n",
				time.Since(instance.CreationTimestamp.Time).Round(time.Second), typo.Message)
			Expect(typo.Message).To(HavePrefix("cluster unready-typo: pod " + instance.Name + ": container "))
			Expect(typo.Message).To(MatchRegexp(`: (ErrImagePull|ImagePullBackOff): `))
			Expect(typo.Message).To(ContainSubstring(typoImage))

			waitForPhase(ctx, unready, benchv1alpha1.PhaseFailed)
			Expect(unready.Status.Results).To(ContainElement(SatisfyAll(
				HaveField("Destination", "csvlog"), HaveField("TPS", BeNumerically(">", 0)),
				HaveField("Records.Dropped", HaveValue(BeZero())))), "the other destination completes")
			degraded := meta.FindStatusCondition(unready.Status.Conditions, benchv1alpha1.ConditionDegraded)
			Expect(degraded).NotTo(BeNil())
			Expect(degraded.Reason).To(Equal(benchv1alpha1.ReasonRunsFailed))
			Expect(degraded.Message).To(ContainSubstring(typoImage))
			events, err := clientset.CoreV1().Events(benchmarkNamespace).List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.name=unready,reason=" + controllers.EventClusterFailed,
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(events.Items).To(ContainElement(HaveField("Message", typo.Message)))
		})

	It("loses and repeats no run when the operator pod is deleted mid-benchmark", func(ctx SpecContext) {
		restarted := faultsBenchmark("restart")
		benchmark = restarted
		createForThisSpec(ctx, restarted)

		By("deleting the operator pod once a run has finished")
		finished := awaitFinishedRuns(ctx, restarted)
		Expect(k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(operatorNamespace),
			client.MatchingLabels{"app.kubernetes.io/name": "logbench"})).To(Succeed())

		waitForPhase(ctx, restarted, benchv1alpha1.PhaseSucceeded)
		expectEveryRunOnce(ctx, restarted, finished)
	})

	It("loses and repeats no run when a runner's pod is deleted mid-run", func(ctx SpecContext) {
		dying := faultsBenchmark("runner-death")
		benchmark = dying
		createForThisSpec(ctx, dying)

		By("deleting the pod of the runner of a run in progress, once a run has finished")
		awaitFinishedRuns(ctx, dying)
		var interrupted results.RunKey
		var finished map[results.RunKey]finishedRun
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(dying), dying)).To(Succeed())
			g.Expect(dying.Status.Phase).To(Equal(benchv1alpha1.PhaseRunning))
			finished = finishedRuns(ctx, g, dying)
			run, inProgress := assignedRun(dying, finished)
			g.Expect(inProgress).To(BeTrue(), "no run in progress")
			runner := runningRunnerPod(ctx, g, dying, run.Destination)
			g.Expect(k8sClient.Delete(ctx, runner)).To(Succeed())
			interrupted = run
			_, _ = fmt.Fprintf(GinkgoWriter, "deleted runner pod %s during run %s at %s\n",
				runner.Name, run, time.Now().Format(time.RFC3339))
		}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(time.Second).Should(Succeed())

		waitForPhase(ctx, dying, benchv1alpha1.PhaseSucceeded)
		expectEveryRunOnce(ctx, dying, finished)
		after := finishedRuns(ctx, Default, dying)
		Expect(after[interrupted].Result.Error).To(BeEmpty(), "the interrupted run %s, run again", interrupted)
	})

	It("neither counts a failover mid-run as dropped records nor waits for ever after it", func(ctx SpecContext) {
		failover := newBenchmark("failover")
		benchmark = failover
		failover.Spec.Baseline.Enabled = false
		failover.Spec.Destinations = []benchv1alpha1.Destination{{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog}}
		failover.Spec.Postgres.Instances = 2
		failover.Spec.Workload.Clients = []int32{1}
		failover.Spec.Workload.Duration = metav1.Duration{Duration: 15 * time.Second}
		// The cluster stays until the spec has seen the promotion, whenever the run ends.
		failover.Spec.Cleanup = benchv1alpha1.CleanupNever
		createForThisSpec(ctx, failover)

		By("deleting the primary's pod while the run runs")
		cluster := failover.Name + "-csvlog"
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(failover), failover)).To(Succeed())
			run, inProgress := assignedRun(failover, finishedRuns(ctx, g, failover))
			g.Expect(inProgress).To(BeTrue(), "no run in progress")
			runningRunnerPod(ctx, g, failover, run.Destination)
		}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(time.Second).Should(Succeed())
		// Past the agent's setup, into pgbench's warm-up or run.
		time.Sleep(5 * time.Second)
		oldPrimary, replica := instancesOf(ctx, cluster)
		_, _ = fmt.Fprintf(GinkgoWriter, "primary %s on %s, replica %s on %s\n",
			oldPrimary.Name, oldPrimary.Spec.NodeName, replica.Name, replica.Spec.NodeName)
		if schedulableNodes(ctx) >= 2 {
			Expect(replica.Spec.NodeName).NotTo(Equal(oldPrimary.Spec.NodeName),
				"CloudNativePG puts the replica on another node than the primary")
		}
		deleted := oldPrimary.Name
		Expect(k8sClient.Delete(ctx, &oldPrimary)).To(Succeed())
		_, _ = fmt.Fprintf(GinkgoWriter, "deleted the primary %s at %s\n", deleted, time.Now().Format(time.RFC3339))

		By("seeing CloudNativePG promote the other instance, on the other node")
		Eventually(func(g Gomega) {
			object := &unstructured.Unstructured{}
			object.SetGroupVersionKind(cloudnativepg.ClusterGVK)
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmarkNamespace, Name: cluster}, object)).
				To(Succeed())
			primary, _, _ := unstructured.NestedString(object.Object, "status", "currentPrimary")
			g.Expect(primary).To(Equal(replica.Name), "the replica is promoted")
			_, _ = fmt.Fprintf(GinkgoWriter, "%s on %s promoted at %s\n",
				primary, replica.Spec.NodeName, time.Now().Format(time.RFC3339))
		}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(failover), failover)).To(Succeed())
			g.Expect(failover.Status.Phase).To(BeElementOf(benchv1alpha1.PhaseSucceeded, benchv1alpha1.PhaseFailed))
		}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(5 * time.Second).Should(Succeed())
		status, err := yaml.Marshal(failover.Status)
		Expect(err).NotTo(HaveOccurred())
		_, _ = fmt.Fprintf(GinkgoWriter, "benchmark %s status:\n%s\n", failover.Name, status)

		// The run either failed with the reason, or was measured exactly.
		rows := rowsWithRuns(ctx, failover)
		Expect(rows).To(HaveLen(1))
		for _, repeat := range rows[0].Repeats {
			_, _ = fmt.Fprintf(GinkgoWriter, "repeat %d: error %q, failed attempts %q\n", repeat.Repeat, repeat.Error,
				repeat.FailedAttempts)
			if repeat.Error != "" {
				continue
			}
			// The run the failover touched was measured again, on the promoted primary: the
			// status names the primary's node when the run ended.
			Expect(repeat.ServerNode).To(Equal(replica.Spec.NodeName), "the node of the promoted primary")
			Expect(repeat.Records.AccountingError).To(BeEmpty())
			Expect(repeat.Records.Dropped).To(HaveValue(BeZero()), "a measured run lost no record")
			Expect(repeat.Records.Delivered).To(Equal(repeat.Records.Expected))
		}
		if failover.Status.Phase == benchv1alpha1.PhaseFailed {
			Expect(rows[0].Repeats).To(ContainElement(HaveField("Error", Not(BeEmpty()))),
				"a failed benchmark says which run failed and why")
		}
	})
})

var _ = Describe("pgaudit", func() {
	It("counts pgaudit's records exactly in the files and as CloudNativePG's container log holds them", func(ctx SpecContext) {
		audited := newBenchmark("pgaudit")
		audited.Spec.Baseline.Enabled = false
		audited.Spec.Destinations = []benchv1alpha1.Destination{
			{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog},
			{Name: "stdout", Type: benchv1alpha1.DestinationStdout},
		}
		// Every record is pgaudit's: log_statement logs nothing.
		audited.Spec.Logging.Statement = benchv1alpha1.StatementNone
		audited.Spec.Logging.Pgaudit = &benchv1alpha1.PgauditSpec{
			Log: []benchv1alpha1.PgauditClass{benchv1alpha1.PgauditWrite, benchv1alpha1.PgauditMisc},
		}
		audited.Spec.Workload.Builtin = benchv1alpha1.WorkloadTPCBLike
		audited.Spec.Workload.Clients = []int32{1}
		audited.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
		// The clusters stay until the spec has read the container log.
		audited.Spec.Cleanup = benchv1alpha1.CleanupNever
		succeedForThisSpec(ctx, audited)
		Expect(audited.Status.Results).To(HaveLen(2))
		for _, row := range rowsWithRuns(ctx, audited) {
			transactions := row.Repeats[0].Transactions
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d records after %d transactions\n",
				row.Destination, row.Records.Delivered, row.Records.Expected, transactions)
			Expect(transactions).To(BeNumerically(">", 0), row.Destination)
			Expect(row.Records.Expected).To(Equal(6*transactions), "%s: four writes, BEGIN and END", row.Destination)
			if row.Type == benchv1alpha1.DestinationCSVLog {
				Expect(row.Records.Delivered).To(Equal(row.Records.Expected), "csvlog: every AUDIT record counted")
				continue
			}
			// CloudNativePG writes pgaudit's records under their own logger, and samples
			// them as it samples the others (see docs/counting.md): the row counts what the
			// container log holds.
			held := recordsOfRun(primaryLog(ctx, audited, row.Destination), row.Destination, row.Clients)
			Expect(held).To(BeNumerically(">", 0), "stdout: no AUDIT record in the container log")
			Expect(row.Records.Delivered).To(Equal(held), "stdout: delivered differs from the container log")
		}
	})
})

// expectSamplerVerdict checks that a csvlog Stdout row compared its records with
// CloudNativePG's sampler, and prints the verdict.
func expectSamplerVerdict(row benchv1alpha1.Result) {
	what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
	sampler := row.Records.Sampler
	Expect(sampler).NotTo(BeNil(), "%s: no verdict on CloudNativePG's sampler", what)
	_, _ = fmt.Fprintf(GinkgoWriter, "%s: TPS %.0f, %d of %d records, %d dropped, %d unverified; sampler %s: %s\n",
		what, row.TPS, row.Records.Delivered, row.Records.Expected, row.Records.KnownDropped(), row.Records.Unverified,
		sampler.Verdict, sampler.Message)
	Expect(sampler.Verdict).NotTo(BeEmpty(), what)
	// Every record read, the windows must be told from a start the stream saw, and bound
	// no more records than the server wrote (else the verdict is Unknown too).
	if row.Records.Unverified == 0 {
		Expect(sampler.Verdict).NotTo(Equal(benchv1alpha1.SamplerUnknown),
			"%s: every record was read, yet: %s", what, sampler.Message)
		Expect(sampler.Windows).To(BeNumerically(">", 0), "%s: the sampler's windows were rebuilt", what)
	}
	// Checked here too, apart from the product's own check: the sampler cannot have
	// received more of the run's records than the server wrote.
	if sampler.Verdict == benchv1alpha1.SamplerMatches && !row.Records.ExpectedIsEstimate {
		Expect(sampler.ReceivedMin).To(BeNumerically("<=", row.Records.Expected),
			"%s: the sampler's windows bound more records than were written", what)
	}
}

// createForThisSpec creates the benchmark and deletes it when the spec ends.
func createForThisSpec(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, benchmark))).To(Succeed())
	})
}

// succeedForThisSpec creates the benchmark for this spec, prints its diagnostics if the
// spec fails, and waits until the benchmark succeeds.
func succeedForThisSpec(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	createForThisSpec(ctx, benchmark)
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			printDiagnostics(benchmark)
		}
	})
	waitForPhase(ctx, benchmark, benchv1alpha1.PhaseSucceeded)
}

// newBenchmark is the small benchmark of the suite: baseline, two file destinations,
// CloudNativePG's default stdout and stdout in jsonlog, two client counts, one 10 s
// repeat each. Its clusters
// stay after success, so that the deletion spec has something to remove.
func newBenchmark(name string) *benchv1alpha1.LoggingBenchmark {
	return &benchv1alpha1.LoggingBenchmark{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchmarkNamespace},
		Spec: benchv1alpha1.LoggingBenchmarkSpec{
			Postgres: benchv1alpha1.PostgresSpec{ImageName: postgresImage},
			Destinations: []benchv1alpha1.Destination{
				{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog},
				{Name: "stderr", Type: benchv1alpha1.DestinationStderr},
				{Name: "stdout", Type: benchv1alpha1.DestinationStdout},
				{Name: "stdout-json", Type: benchv1alpha1.DestinationStdout, Format: benchv1alpha1.FormatJSONLog},
			},
			Baseline: benchv1alpha1.BaselineSpec{Enabled: true},
			Workload: benchv1alpha1.WorkloadSpec{
				Scale:    1,
				Clients:  []int32{1, 2},
				Duration: metav1.Duration{Duration: 10 * time.Second},
				Repeats:  1,
				Warmup:   metav1.Duration{Duration: time.Second},
			},
			DrainTimeout: metav1.Duration{Duration: 30 * time.Second},
			Cleanup:      benchv1alpha1.CleanupNever,
		},
	}
}

// waitForPhase waits for benchmark to reach phase, stopping early if it fails instead,
// and prints its status.
func waitForPhase(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark, phase benchv1alpha1.Phase) {
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), benchmark)).To(Succeed())
		if benchmark.Status.Phase == benchv1alpha1.PhaseFailed && phase != benchv1alpha1.PhaseFailed {
			StopTrying("the benchmark failed").Now()
		}
		g.Expect(benchmark.Status.Phase).To(Equal(phase), func() string {
			return benchmark.Status.Progress.Text + " " + nodeTrouble(ctx)
		})
	}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(5 * time.Second).Should(Succeed())
	printStatus(benchmark)
}

// waitWithKubectl waits for benchmark to succeed with kubectl wait for its Complete
// condition and the benchmark's short name, as a user's script does, stopping early if
// it fails instead, and prints its status.
func waitWithKubectl(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	waitCtx, cancel := context.WithTimeout(ctx, benchmarkTimeout)
	defer cancel() // stops kubectl when the benchmark failed
	args := append(slices.Clone(kubectlArgs), "-n", benchmarkNamespace, "wait", "lbench/"+benchmark.Name,
		"--for=condition="+benchv1alpha1.ConditionComplete, "--timeout="+benchmarkTimeout.String())
	var output []byte
	done := make(chan error, 1)
	go func() {
		var err error
		output, err = exec.CommandContext(waitCtx, "kubectl", args...).CombinedOutput()
		done <- err
	}()
	var waitErr error
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), benchmark)).To(Succeed())
		if benchmark.Status.Phase == benchv1alpha1.PhaseFailed {
			StopTrying("the benchmark failed").Now()
		}
		g.Expect(done).To(Receive(&waitErr), func() string {
			return "kubectl wait returned: " + benchmark.Status.Progress.Text + " " + nodeTrouble(ctx)
		})
	}).WithContext(ctx).WithTimeout(benchmarkTimeout + time.Minute).WithPolling(5 * time.Second).Should(Succeed())
	Expect(waitErr).NotTo(HaveOccurred(), func() string {
		return fmt.Sprintf("kubectl %s: %s %s", strings.Join(args, " "), output, nodeTrouble(ctx))
	})
	Expect(string(output)).To(ContainSubstring("condition met"))
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(benchmark), benchmark)).To(Succeed())
	Expect(benchmark.Status.Phase).To(Equal(benchv1alpha1.PhaseSucceeded), "the phase agrees with Complete")
	Expect(meta.IsStatusConditionFalse(benchmark.Status.Conditions, benchv1alpha1.ConditionFailed)).To(BeTrue())
	printStatus(benchmark)
}

func printStatus(benchmark *benchv1alpha1.LoggingBenchmark) {
	status, err := yaml.Marshal(benchmark.Status)
	Expect(err).NotTo(HaveOccurred())
	_, _ = fmt.Fprintf(GinkgoWriter, "benchmark %s status:\n%s\n", benchmark.Name, status)
}

// recordsOfRun counts the container-log lines (one per record, whether CloudNativePG
// wrapped a csvlog record or passed a jsonlog line through, with its quotes escaped) whose
// application name is the tag of the first repeat of destination at clients:
// lb_<destination>_c<clients>_r1_<nonce>.
func recordsOfRun(log, destination string, clients int32) int64 {
	marker := regexp.MustCompile(
		fmt.Sprintf(`"application_name\\?":\\?"lb_%s_c%d_r1_`, regexp.QuoteMeta(destination), clients))
	var count int64
	for line := range strings.SplitSeq(log, "\n") {
		if marker.MatchString(line) {
			count++
		}
	}
	return count
}

// primaryLog returns the postgres container log of the primary serving destination.
func primaryLog(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark, destination string) string {
	clusterName := clusterOf(benchmark, destination)
	pods := &corev1.PodList{}
	Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels{"cnpg.io/cluster": clusterName, "cnpg.io/instanceRole": "primary"})).To(Succeed())
	Expect(pods.Items).To(HaveLen(1), "primary of %s", clusterName)
	log, err := clientset.CoreV1().Pods(benchmark.Namespace).
		GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{Container: "postgres"}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	return string(log)
}

func crdEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, condition := range crd.Status.Conditions {
		if condition.Type == apiextensionsv1.Established {
			return condition.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// gaugeValue is the value of the gauge of family name whose labels include labels; it
// fails when there is not exactly one.
func gaugeValue(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, error) {
	family, found := families[name]
	if !found {
		return 0, fmt.Errorf("no metric %s", name)
	}
	var values []float64
	for _, metric := range family.GetMetric() {
		matched := 0
		for _, pair := range metric.GetLabel() {
			if want, set := labels[pair.GetName()]; set && want == pair.GetValue() {
				matched++
			}
		}
		if matched == len(labels) {
			values = append(values, metric.GetGauge().GetValue())
		}
	}
	if len(values) != 1 {
		return 0, fmt.Errorf("%d series of %s with labels %v, want 1", len(values), name, labels)
	}
	return values[0], nil
}

// scrapeMetricFamilies scrapes the operator's metrics and parses them by family.
func scrapeMetricFamilies(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	metrics, err := scrapeMetrics(ctx)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(metrics))
}

// printDiagnostics writes what explains a failure: the operator's logs, the events of
// the benchmark's namespace, the nodes and every pod's node, the benchmark itself, the
// logs of its runners and the output of the extra kubectl commands given.
func printDiagnostics(benchmark *benchv1alpha1.LoggingBenchmark, extra ...[]string) {
	commands := [][]string{
		{"-n", operatorNamespace, "logs", "deployment/logbench", "--tail=200"},
		{"-n", benchmarkNamespace, "get", "events", "--sort-by=.lastTimestamp"},
		{"get", "nodes", "-o", "wide"},
		{"get", "nodes", "-o", "custom-columns=NAME:.metadata.name,CONDITIONS:.status.conditions[?(@.status==\"True\")].type,TAINTS:.spec.taints[*].key"},
		{"get", "pods", "--all-namespaces", "-o", "wide"},
		{"-n", benchmarkNamespace, "get", "deployments,clusters.postgresql.cnpg.io,pvc,loggingbenchmarkruns", "-o", "wide"},
	}
	if benchmark != nil {
		commands = append(commands,
			[]string{"-n", benchmarkNamespace, "get", "loggingbenchmark", benchmark.Name, "-o", "yaml"},
			[]string{"-n", benchmarkNamespace, "logs", "--prefix", "--tail=100", "--all-containers",
				"-l", metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: builders.BenchmarkRunnerLabels(benchmark.Name)})})
	}
	for _, args := range append(commands, extra...) {
		output, err := exec.Command("kubectl", append(append([]string{}, kubectlArgs...), args...)...).CombinedOutput()
		_, _ = fmt.Fprintf(GinkgoWriter, "\n--- kubectl %s (err=%v)\n%s\n", strings.Join(args, " "), err, output)
	}
}

// faultsBenchmark is a benchmark of the baseline and one file destination at two client
// counts, whose runs last long enough to catch one in progress polling every second.
func faultsBenchmark(name string) *benchv1alpha1.LoggingBenchmark {
	benchmark := newBenchmark(name)
	benchmark.Spec.Destinations = []benchv1alpha1.Destination{{Name: "csvlog", Type: benchv1alpha1.DestinationCSVLog}}
	benchmark.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
	benchmark.Spec.Cleanup = benchv1alpha1.CleanupAlways
	return benchmark
}

// assignedRun is the run benchmark's status assigns to its runner, when it has not
// finished.
func assignedRun(benchmark *benchv1alpha1.LoggingBenchmark, finished map[results.RunKey]finishedRun,
) (results.RunKey, bool) {
	run, err := results.ParseRunKey(benchmark.Status.Progress.Current)
	_, done := finished[run]
	return run, err == nil && benchmark.Status.Phase == benchv1alpha1.PhaseRunning && !done
}

// runningRunnerPod is the running pod of the runner of benchmark's destination.
func runningRunnerPod(ctx context.Context, g Gomega, benchmark *benchv1alpha1.LoggingBenchmark, destination string,
) *corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(ctx, pods, client.InNamespace(benchmark.Namespace),
		client.MatchingLabels(builders.RunnerLabels(benchmark.Name, destination)))).To(Succeed())
	for i, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil {
			return &pods.Items[i]
		}
	}
	g.Expect(pods.Items).To(ContainElement(HaveField("Status.Phase", corev1.PodRunning)),
		"the runner of %s is not running", destination)
	return nil
}
