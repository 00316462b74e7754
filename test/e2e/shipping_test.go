//go:build e2e

package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	benchv1alpha1 "github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/report"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/workload"
)

// shippingSetup is what the shipping spec runs with on the cluster under test.
type shippingSetup struct {
	// fluentBitImage and collectorImage are the shippers' images, "" for logbench's
	// pinned upstream defaults.
	fluentBitImage string
	collectorImage string
	lokiImage      string
}

// The Loki of testdata/loki.yaml, in the benchmark namespace, and its tenants.
const (
	lokiURL              = "http://loki." + benchmarkNamespace + ".svc:3100"
	lokiTenantOpen       = "open"
	lokiTenantLimited    = "limited"
	lokiTenantSmallBurst = "small-burst"
	lokiTenantTight      = "tight"
	// lokiTenantTightTakes is about how many of the node agent's records (about 1 KB each)
	// the tight tenant's 1 MB burst and 10 KB/s rate take of a run (testdata/loki.yaml).
	lokiTenantTightTakes = 1000
)

// Destinations of the shipping spec that send to a rate-limited tenant, whose records
// Loki refuses past its rate (Fluent Bit's to the tenant of small bursts, on which it
// loses records at any rate of the run; the collector's to the tenant of a higher rate,
// whose refusals it retries), and the one whose Fluent Bit input has a buffer far below
// what a run sends between two flushes, so that it pauses reading.
const (
	fluentBitLimited = "loki-limited"
	collectorLimited = "otel-limited"
	backpressure     = "fluent-backpressure"
)

// destinations are the shipping spec's: every Fluent Bit output (Null, Stdout, Loki), the
// Loki destination through Fluent Bit and through the collector, each to a tenant that
// takes everything and to one whose ingestion rate the runs exceed, and a Fluent Bit
// sidecar whose input buffer fills.
func (s shippingSetup) destinations() []benchv1alpha1.Destination {
	open := &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantOpen}
	// The suite's Loki ignores credentials: these are canaries (expectNoLeak).
	basicAuth, bearerToken := *open, *open
	basicAuth.Auth = &benchv1alpha1.LokiAuth{Basic: &benchv1alpha1.BasicAuthSecret{
		SecretName: lokiCredentials, UsernameKey: "username", PasswordKey: "password",
	}}
	bearerToken.Auth = &benchv1alpha1.LokiAuth{BearerToken: &benchv1alpha1.SecretKeyRef{
		SecretName: lokiCredentials, Key: "token",
	}}
	limited := &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantLimited}
	smallBurst := &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantSmallBurst}
	fluentBit := func(output benchv1alpha1.ShipperOutput) *benchv1alpha1.ShipperSpec {
		return &benchv1alpha1.ShipperSpec{Kind: benchv1alpha1.ShipperFluentBit, Image: s.fluentBitImage, Output: output}
	}
	collector := &benchv1alpha1.ShipperSpec{Kind: benchv1alpha1.ShipperOpenTelemetryCollector, Image: s.collectorImage}
	// Small enough that a second of records fills it even on a loaded node: 1Mi holds more
	// than a run of several hundred TPS writes, and never pauses the input.
	smallBuffer := resource.MustParse("64Ki")
	paused := fluentBit(benchv1alpha1.OutputLoki)
	paused.MemBufLimit = &smallBuffer
	const sidecar = benchv1alpha1.DestinationFluentBitSidecar
	return []benchv1alpha1.Destination{
		{Name: "fluent-null", Type: sidecar, Shipper: fluentBit(benchv1alpha1.OutputNull)},
		{Name: "fluent-stdout", Type: sidecar, Shipper: fluentBit(benchv1alpha1.OutputStdout)},
		{Name: "fluent-loki", Type: sidecar, Shipper: fluentBit(benchv1alpha1.OutputLoki), Loki: open},
		{Name: "loki", Type: benchv1alpha1.DestinationLoki, Shipper: fluentBit(""), Loki: &basicAuth},
		{Name: fluentBitLimited, Type: benchv1alpha1.DestinationLoki, Shipper: fluentBit(""), Loki: smallBurst},
		{Name: "otel", Type: benchv1alpha1.DestinationLoki, Shipper: collector, Loki: &bearerToken},
		{Name: collectorLimited, Type: benchv1alpha1.DestinationLoki, Shipper: collector, Loki: limited},
		{Name: backpressure, Type: sidecar, Shipper: paused, Loki: open},
	}
}

// stackLabel marks the specs that need the images of Loki, the OpenTelemetry Collector
// and the Prometheus Operator stack: make e2e-local E2E_LABEL_FILTER='!stack' runs the
// others on a local cluster brought up without them (up.sh --without-stack).
const stackLabel = "stack"

var _ = Describe("shipping", Ordered, Label(stackLabel), func() {
	var benchmark *benchv1alpha1.LoggingBenchmark
	var planted canaries
	var runners *runnerLogs
	followingRunners, stopFollowing := context.WithCancel(context.Background())

	// The shipping benchmark keeps its clusters until the leak search has read the
	// shippers' logs and the clusters' passwords.
	AfterAll(func(ctx SpecContext) {
		stopFollowing()
		if benchmark != nil {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, benchmark))).To(Succeed())
		}
	})

	AfterEach(func() {
		if CurrentSpecReport().Failed() {
			printDiagnostics(benchmark,
				[]string{"-n", benchmarkNamespace, "logs", "deployment/loki", "--tail=100"},
				[]string{"-n", benchmarkNamespace, "logs", "-l", "cnpg.io/podRole=instance", "-c", "logbench-shipper",
					"--prefix", "--tail=50"})
		}
	})

	It("ships every record through Fluent Bit and the collector, "+
		"reports each loss with its stage and reason, and the shippers' CPU and memory", func(ctx SpecContext) {
		if shipping.lokiImage == "" {
			testenv.Missing(GinkgoTB(), "E2E_LOKI_IMAGE names the Loki image; make test-e2e-local and make test-e2e set it")
		}
		deployLoki(ctx)
		planted = plantLokiCredentials(ctx)

		benchmark = newBenchmark("shipping")
		benchmark.Spec.Destinations = shipping.destinations()
		benchmark.Spec.Workload.Clients = []int32{2}
		benchmark.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
		// The shippers read the file at their own pace beside a busy server: their drains
		// take seconds, the collector's retries to the limited tenant tens of seconds or
		// until this deadline (its held records are then reported as such). The paused
		// input's drain lasts until the deadline, which bounds the spec's length.
		benchmark.Spec.DrainTimeout = metav1.Duration{Duration: 20 * time.Second}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		runners = followRunnerLogs(followingRunners, benchmark.Name)
		waitForPhase(ctx, benchmark, benchv1alpha1.PhaseSucceeded)

		Expect(benchmark.Status.Results).To(HaveLen(int(benchmark.Status.Progress.RunsTotal)))
		for _, row := range rowsWithRuns(ctx, benchmark) {
			what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
			records := row.Records
			Expect(row.TPS).To(BeNumerically(">", 0), what)
			Expect(records.AccountingError).To(BeEmpty(), what)
			if row.Destination == "baseline" {
				continue
			}
			Expect(records.Expected).To(BeNumerically(">", 0), what)
			Expect(records.Stages).NotTo(BeNil(), "%s: a shipping row counts its stages", what)
			Expect(records.Stages.Written).To(HaveValue(Equal(records.Expected)), "%s: PostgreSQL wrote every record to the file", what)
			Expect(row.LogBytesPerRecord).To(HaveValue(BeNumerically(">=", 60)), "%s: log bytes of the file per record", what)
			switch row.Destination {
			case fluentBitLimited, collectorLimited:
				// Loki refuses pushes past the tenant's rate. Fluent Bit gives up after its
				// retries: a loss. The collector retries for minutes; the drain waits while it
				// holds records, so they arrive late, or are reported as still held when the
				// drain's deadline passes.
				drainEnd := row.Repeats[0].DrainEnd
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d delivered, %d late, %d duplicates (counted by identity: %t), "+
					"drain %.1f s (%s); %s\n", what, records.Delivered, records.Expected, records.ArrivedLate,
					records.Duplicates, records.Stages.DuplicatesExact, row.DrainSeconds, drainEnd, records.DropReason)
				switch {
				case records.Stages.DuplicatesExact && !records.ExpectedIsEstimate && records.ArrivedLate == 0:
					// (Records that arrived after the drain make the drop "at least" again.)
					Expect(records.Dropped).NotTo(BeNil(), "%s: duplicates counted by identity make the drop exact", what)
				case records.Duplicates > 0 && records.KnownDropped() > 0:
					// Retries made duplicates possible, so the csvlog records were read back
					// from Loki: the reason says why that read gave no count.
					Expect(records.DropReason).To(ContainSubstring("duplicates are a lower bound"), what)
				}
				if row.Destination == fluentBitLimited {
					Expect(records.KnownDropped()).To(BeNumerically(">", 0), "%s: Loki refuses records past the tenant's rate", what)
					Expect(records.DropReason).To(ContainSubstring("the shipper dropped"), "%s: Fluent Bit's own counters tell", what)
				}
				if records.KnownDropped() > 0 {
					Expect(records.Stages.LostAt).NotTo(BeEmpty(), "%s: the losing stage is named", what)
					Expect(records.DropReason).To(ContainSubstring("rate_limited"), what)
				}
				// The tenant the destination ships to, as destinations() set it.
				spec := benchmark.Spec.Destinations[slices.IndexFunc(benchmark.Spec.Destinations,
					func(d benchv1alpha1.Destination) bool { return d.Name == row.Destination })]
				held := lokiHolds(ctx, spec.Loki.TenantID, benchmark, row.Destination)
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: the tenant holds %d now\n", what, held)
				Expect(held).To(BeNumerically(">=", records.Delivered), "%s: Loki lost nothing it had counted", what)
				if drainEnd != benchv1alpha1.DrainTimeout {
					// Nothing was left to retry when the drain ended: the tenant holds no
					// record the row did not count, because the drain waits for the
					// shipper's retries.
					Expect(held).To(BeNumerically("<=", records.Delivered+records.ArrivedLate), "%s: no record stored after the drain", what)
				}
			case backpressure:
				// A full buffer delays the file's records: they arrive late, or are reported
				// as still unread in the file, never as lost by the shipper.
				Expect(records.Stages.InputPausedSeconds).To(BeNumerically(">", 0),
					"%s: the input paused on its buffer limit", what)
				if records.Delivered < records.Expected {
					Expect(records.Stages.LostAt).To(Equal("read"), what)
					Expect(records.DropReason).To(ContainSubstring("still unread in the file"), what)
				}
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: input paused for %.1f s, %d of %d delivered, drain %.1f s, TPS %.0f\n",
					what, records.Stages.InputPausedSeconds, records.Delivered, records.Expected, row.DrainSeconds, row.TPS)
			default:
				// On a busy node a shipper may pause past the drain's quiet period: its records
				// then arrive late, which the row says, and are not lost.
				_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d delivered, %d late, drain %.1f s; %s\n",
					what, records.Delivered, records.Expected, records.ArrivedLate, row.DrainSeconds, report.StagesNote(row))
				Expect(records.Delivered+records.ArrivedLate).To(Equal(records.Expected), "%s: every record arrives", what)
				Expect(records.Stages.LostAt).To(BeEmpty(), what)
				Expect(records.DropReason).To(BeEmpty(), what)
			}
		}
		expectPlausibleCost(ctx, benchmark)
	})

	It("is scraped by a Prometheus set up as kube-prometheus-stack's: every row, every dashboard panel, "+
		"the dropped-records alert firing", func(ctx SpecContext) {
		Expect(benchmark).NotTo(BeNil(), "needs the benchmark of the previous spec")
		// The alerts and the rows come from scrapes every 5 s and rule evaluations as often.
		Eventually(func(g Gomega) {
			expectResultsInPrometheus(ctx, g, benchmark)
			expectDashboardPanelsAnswer(ctx, g, benchmark)
			expectDroppedRecordsAlerts(ctx, g, benchmark)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		query := fmt.Sprintf(`logbench_result_records_dropped{namespace=%q, benchmark=%q} > 0`,
			benchmark.Namespace, benchmark.Name)
		lossy, err := prometheusQuery(ctx, query)
		Expect(err).NotTo(HaveOccurred())
		_, _ = fmt.Fprintf(GinkgoWriter, "Prometheus: %s\n", query)
		for _, sample := range lossy {
			_, _ = fmt.Fprintf(GinkgoWriter, "  %s (%s) at %s clients: %g\n", sample.Labels["destination"],
				sample.Labels["type"], sample.Labels["clients"], sample.Value)
		}
	})

	It("leaks no credential into anything it writes", func(ctx SpecContext) {
		planted.addClusterPasswords(ctx, benchmark)
		expectNoLeak(ctx, benchmark, planted, runners)
	})

	It("opens the ports of every cluster's instances to their peers only", func(ctx SpecContext) {
		expectClosedPorts(ctx, benchmark)
	})

	It("seals the meter and the shippers off the server's environment, token and /controller", func(ctx SpecContext) {
		expectSealedContainers(ctx, benchmark)
	})

	It("counts a Stdout destination in the Loki a node agent ships the container log to, "+
		"beside the container log, and names the stage that lost records", func(ctx SpecContext) {
		deployLoki(ctx)
		deployNodeAgent(ctx)
		// jsonlog lines pass through CloudNativePG's instance manager as they are; its csvlog
		// records are sampled before they reach the container log.
		platform := nodeAgentBenchmark("platform",
			// The default selector: the labels the agent attaches, as Promtail's and Alloy's.
			benchv1alpha1.Destination{Name: "agent-open", Type: benchv1alpha1.DestinationStdout,
				Format: benchv1alpha1.FormatJSONLog, Loki: &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantOpen}},
			benchv1alpha1.Destination{Name: "agent-csvlog", Type: benchv1alpha1.DestinationStdout,
				Loki: &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantOpen}},
			benchv1alpha1.Destination{Name: nodeAgentTight, Type: benchv1alpha1.DestinationStdout,
				Format: benchv1alpha1.FormatJSONLog, Loki: &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantTight,
					Selector: `{job="node-agent", namespace="${namespace}", pod="${pod}", container="${container}"}`}},
		)
		platform.Spec.Cleanup = benchv1alpha1.CleanupAlways
		succeedWithNodeAgent(ctx, platform)

		Expect(platform.Status.Results).To(HaveLen(3))
		for _, row := range rowsWithRuns(ctx, platform) {
			what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
			records := row.Records
			_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d of %d delivered, %d late, drain %.1f s; %s; %s\n", what,
				records.Delivered, records.Expected, records.ArrivedLate, row.DrainSeconds, report.StagesNote(row),
				records.DropReason)
			Expect(records.Expected).To(BeNumerically(">", 0), what)
			Expect(records.AccountingError).To(BeEmpty(), what)
			Expect(records.Stages).NotTo(BeNil(), "%s: the container log and Loki are counted side by side", what)
			Expect(records.Stages.Stored).To(HaveValue(Equal(records.Delivered)), "%s: delivered is what Loki holds", what)
			Expect(records.Stages.ContainerLog).NotTo(BeNil(), what)
			inLog := *records.Stages.ContainerLog
			tenant := lokiTenantOpen
			if row.Destination == nodeAgentTight {
				tenant = lokiTenantTight
			}
			// The tight tenant may refuse every push of a short run: then no pod's records
			// are in Loki to tell the nodes apart.
			if row.Destination != nodeAgentTight || records.Delivered+records.ArrivedLate > 0 {
				_, shipped := expectOnlyPrimaryShipped(ctx, tenant, platform, row)
				Expect(shipped).To(BeNumerically(">=", records.Delivered), "%s: delivered are the primary's records", what)
				if row.Destination != nodeAgentTight {
					Expect(shipped).To(Equal(records.Delivered+records.ArrivedLate),
						"%s: Loki holds no record of the runs the row did not count", what)
				}
			}
			switch row.Destination {
			case "agent-csvlog":
				Expect(inLog).To(BeNumerically("<", records.Expected), "%s: CloudNativePG sampled the records", what)
				Expect(records.Stages.LostAt).To(Equal("containerLog"), what)
				Expect(records.DropReason).To(ContainSubstring("cloudnative-pg issue #10815"), "%s: the sampler's verdict", what)
				Expect(records.Delivered+records.ArrivedLate).To(Equal(inLog),
					"%s: the agent shipped every record the container log held", what)
			case nodeAgentTight:
				Expect(inLog).To(Equal(records.Expected), "%s: the container log holds every record", what)
				if inLog <= 2*lokiTenantTightTakes && records.Dropped != nil && *records.Dropped == 0 {
					// A run slowed down by a loaded node can log no more than the tenant's burst takes.
					_, _ = fmt.Fprintf(GinkgoWriter, "%s: %d records, within what the tight tenant takes: none refused\n",
						what, inLog)
					Expect(records.Stages.LostAt).To(BeEmpty(), what)
					break
				}
				Expect(records.Dropped).To(HaveValue(BeNumerically(">", 0)), "%s: Loki refuses records past the tenant's rate", what)
				Expect(records.Stages.LostAt).To(Equal("stored"), "%s: lost between the container log and Loki", what)
				Expect(records.DropReason).To(ContainSubstring("rate_limited"), what)
			default:
				Expect(inLog).To(Equal(records.Expected), "%s: the container log holds every record", what)
				Expect(records.Delivered+records.ArrivedLate).To(Equal(records.Expected), "%s: every record arrives", what)
				Expect(records.Stages.LostAt).To(BeEmpty(), what)
				Expect(records.DropReason).To(BeEmpty(), what)
			}
		}
	})

	// Last of the shipping specs: the restarted Loki holds nothing of the earlier ones.
	// Whether the restart loses records depends on what the shipper was retrying when it
	// came: any loss must name the restart, and the accounts close either way.
	It("reports the records a Loki restart loses with the restart as their reason, and runs the next run clean",
		func(ctx SpecContext) {
			const destination = "loki-restart"
			restart := newBenchmark(destination)
			restart.Spec.Baseline.Enabled = false
			restart.Spec.Destinations = []benchv1alpha1.Destination{{
				Name:    destination,
				Type:    benchv1alpha1.DestinationLoki,
				Shipper: &benchv1alpha1.ShipperSpec{Kind: benchv1alpha1.ShipperFluentBit, Image: shipping.fluentBitImage},
				Loki:    &benchv1alpha1.LokiSpec{URL: lokiURL, TenantID: lokiTenantOpen},
			}}
			restart.Spec.Workload.Clients = []int32{1}
			restart.Spec.Workload.Repeats = 2
			restart.Spec.DrainTimeout = metav1.Duration{Duration: 2 * time.Minute}
			restart.Spec.Cleanup = benchv1alpha1.CleanupAlways
			// The leak search is done with the shipping benchmark's clusters.
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, benchmark))).To(Succeed())
			benchmark = restart
			Expect(k8sClient.Create(ctx, restart)).To(Succeed())

			By("restarting Loki, its storage lost, once it holds records of the first run")
			Eventually(func(g Gomega) {
				g.Expect(lokiHolds(ctx, lokiTenantOpen, restart, destination)).To(BeNumerically(">", 0))
			}).WithContext(ctx).WithTimeout(benchmarkTimeout).WithPolling(time.Second).Should(Succeed())
			Expect(k8sClient.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(benchmarkNamespace),
				client.MatchingLabels{"app.kubernetes.io/name": "loki"})).To(Succeed())
			_, _ = fmt.Fprintf(GinkgoWriter, "deleted Loki's pod at %s\n", time.Now().Format(time.RFC3339))

			waitForPhase(ctx, restart, benchv1alpha1.PhaseSucceeded)
			Expect(restart.Status.Results).To(HaveLen(1))
			repeats := rowsWithRuns(ctx, restart)[0].Repeats
			Expect(repeats).To(HaveLen(2))
			for _, repeat := range repeats {
				records := repeat.Records
				_, _ = fmt.Fprintf(GinkgoWriter, "repeat %d: %d of %d delivered, %d late, drain %.1f s (%s); %s\n",
					repeat.Repeat, records.Delivered, records.Expected, records.ArrivedLate, repeat.DrainSeconds,
					repeat.DrainEnd, records.DropReason)
				Expect(repeat.Error).To(BeEmpty(), "repeat %d was measured", repeat.Repeat)
				Expect(records.AccountingError).To(BeEmpty(), "repeat %d", repeat.Repeat)
				Expect(repeat.DrainSeconds).To(BeNumerically("<=", restart.Spec.DrainTimeout.Seconds()))
				if repeat.Repeat == 1 && records.KnownDropped() > 0 {
					Expect(records.DropReason).To(HavePrefix("loki restarted during the run"))
					continue
				}
				if repeat.Repeat == 1 {
					// A restart early in the run can lose nothing: the restarted Loki holds
					// every record the shipper sent or retried after it, so nothing is to blame.
					_, _ = fmt.Fprintf(GinkgoWriter, "the restart lost no record of repeat 1: the restarted Loki "+
						"holds all %d\n", records.Delivered+records.ArrivedLate)
				}
				Expect(records.Delivered+records.ArrivedLate).To(Equal(records.Expected), "repeat %d lost nothing", repeat.Repeat)
				Expect(records.DropReason).To(BeEmpty(), "repeat %d", repeat.Repeat)
			}
		})
})

// lokiHolds counts the records of destination's runs since benchmark was created that
// the tenant of the suite's Loki holds (a rerun on the same cluster finds the records of
// earlier runs there).
func lokiHolds(ctx context.Context, tenant string, benchmark *benchv1alpha1.LoggingBenchmark, destination string) int64 {
	since := lokiRangeOf(benchmark)
	// The runs' records, not the warm-up's, which the collector ships too.
	runs := workload.TagPattern(destination)
	query := fmt.Sprintf(`sum(count_over_time({job="logbench", destination=%q} |~ %q [%s]))`, destination, runs, since)
	if destination == collectorLimited {
		query = fmt.Sprintf(`sum(count_over_time({service_name="logbench-shipping-%s"} |~ %q [%s]))`,
			destination, runs, since)
	}
	samples := lokiCounts(ctx, tenant, query)
	if len(samples) == 0 {
		return 0
	}
	return samples[0].count
}

// lokiRangeOf is the range of a count query that holds every record of benchmark: no
// record of it is older than it, and the previous benchmark of a rerun ran minutes before.
func lokiRangeOf(benchmark *benchv1alpha1.LoggingBenchmark) string {
	return fmt.Sprintf("%ds", int(time.Since(benchmark.CreationTimestamp.Time).Seconds())+2)
}

// lokiSample is one series of a Loki count query: its labels and its count.
type lokiSample struct {
	labels map[string]string
	count  int64
}

// lokiCounts runs the instant count query on the tenant of the suite's Loki, through the
// API server's service proxy, which both providers reach. While Loki's Service has no
// ready endpoint (a Loki restarting, or unready a moment on a busy node) the proxy
// answers 503: the query is retried for a minute, then fails with the Loki pods' state.
func lokiCounts(ctx context.Context, tenant, query string) []lokiSample {
	var body []byte
	Eventually(func(g Gomega) {
		var err error
		body, err = clientset.CoreV1().RESTClient().Get().Namespace(benchmarkNamespace).
			Resource("services").Name("loki:3100").SubResource("proxy").Suffix("loki/api/v1/query").
			Param("query", query).SetHeader("X-Scope-OrgID", tenant).DoRaw(ctx)
		if err != nil && !apierrors.IsServiceUnavailable(err) {
			StopTrying(fmt.Sprintf("querying Loki: %s", body)).Wrap(err).Now()
		}
		g.Expect(err).NotTo(HaveOccurred(), "querying Loki: %s", body)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2*time.Second).
		Should(Succeed(), func() string { return lokiPodsState(ctx) })
	var answer struct {
		Data struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	Expect(json.Unmarshal(body, &answer)).To(Succeed(), string(body))
	samples := make([]lokiSample, 0, len(answer.Data.Result))
	for _, series := range answer.Data.Result {
		count, err := strconv.ParseInt(fmt.Sprint(series.Value[1]), 10, 64)
		Expect(err).NotTo(HaveOccurred(), string(body))
		samples = append(samples, lokiSample{labels: series.Metric, count: count})
	}
	return samples
}

// lokiPodsState says, for each pod of the suite's Loki, its phase, whether it is ready,
// how often it restarted and why it last ended.
func lokiPodsState(ctx context.Context) string {
	pods, err := clientset.CoreV1().Pods(benchmarkNamespace).List(ctx,
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=loki"})
	if err != nil {
		return "Loki's pods: " + err.Error()
	}
	states := []string{}
	for _, pod := range pods.Items {
		state := fmt.Sprintf("%s on %s: %s, ready %t", pod.Name, pod.Spec.NodeName, pod.Status.Phase, podReady(pod))
		for _, container := range pod.Status.ContainerStatuses {
			state += fmt.Sprintf(", %d restarts", container.RestartCount)
			if ended := container.LastTerminationState.Terminated; ended != nil {
				state += fmt.Sprintf(", last ended %s (exit %d)", ended.Reason, ended.ExitCode)
			}
		}
		states = append(states, state)
	}
	return "Loki's pods: [" + strings.Join(states, "; ") + "]; " + nodeTrouble(ctx)
}

// podReady says whether pod's Ready condition is True.
func podReady(pod corev1.Pod) bool {
	return slices.ContainsFunc(pod.Status.Conditions, func(condition corev1.PodCondition) bool {
		return condition.Type == corev1.PodReady && condition.Status == corev1.ConditionTrue
	})
}

// deployLoki applies testdata/loki.yaml with the provider's Loki image and waits until
// Loki is ready.
func deployLoki(ctx context.Context) {
	applyManifest(ctx, "testdata/loki.yaml", benchmarkNamespace, map[string]string{"@LOKI_IMAGE@": shipping.lokiImage})
	Eventually(func(g Gomega) {
		deployment := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: benchmarkNamespace, Name: "loki"}, deployment)).To(Succeed())
		g.Expect(deployment.Status.ReadyReplicas).To(BeNumerically(">=", 1), "Loki not ready")
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

// applyManifest applies the objects of a testdata manifest, with each placeholder
// replaced, in namespace (cluster-scoped kinds, named Cluster*, in none).
func applyManifest(ctx context.Context, path, namespace string, placeholders map[string]string) {
	manifest, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	for placeholder, value := range placeholders {
		manifest = bytes.ReplaceAll(manifest, []byte(placeholder), []byte(value))
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	for {
		object := &unstructured.Unstructured{}
		if err := decoder.Decode(&object.Object); errors.Is(err, io.EOF) {
			break
		} else {
			Expect(err).NotTo(HaveOccurred())
		}
		if !strings.HasPrefix(object.GetKind(), "Cluster") {
			object.SetNamespace(namespace)
		}
		Expect(k8sClient.Patch(ctx, object, client.Apply, client.FieldOwner("logbench-e2e"), client.ForceOwnership)).
			To(Succeed())
	}
}

// The node agent of testdata/node-agent.yaml: its namespace, and the destination name
// whose pods it routes to the tight tenant.
const (
	nodeAgentNamespace = "logbench-e2e-node-agent"
	nodeAgentTight     = "agent-tight"
)

// deployNodeAgent installs the node agent of testdata/node-agent.yaml as a platform
// would, in a namespace of its own (it mounts the node's log directories), and waits
// until a ready agent pod runs on every schedulable node. It is removed when the spec
// ends: other specs' runs must not share the node's cores with it.
func deployNodeAgent(ctx context.Context) {
	if shipping.fluentBitImage == "" {
		testenv.Missing(GinkgoTB(),
			"E2E_FLUENT_BIT_IMAGE names the node agent's Fluent Bit image; make test-e2e-local and make test-e2e set it")
	}
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodeAgentNamespace}}
	// An earlier spec's agent namespace may still be terminating.
	Eventually(func(g Gomega) {
		g.Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, namespace.DeepCopy()))).To(Succeed())
		current := &corev1.Namespace{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(namespace), current)).To(Succeed())
		g.Expect(current.DeletionTimestamp).To(BeNil(), "namespace %s is terminating", nodeAgentNamespace)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		for _, object := range []client.Object{
			namespace,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "logbench-e2e-node-agent"}},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "logbench-e2e-node-agent"}},
		} {
			Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, object))).To(Succeed())
		}
	})
	applyManifest(ctx, "testdata/node-agent.yaml", nodeAgentNamespace, map[string]string{
		"@NAMESPACE@":        benchmarkNamespace,
		"@AGENT_NAMESPACE@":  nodeAgentNamespace,
		"@TIGHT@":            nodeAgentTight,
		"@POD_LOGS_DIR@":     kubeletPodLogsDir(ctx),
		"@FLUENT_BIT_IMAGE@": shipping.fluentBitImage,
	})
	Eventually(func(g Gomega) {
		agent := &appsv1.DaemonSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: nodeAgentNamespace, Name: "node-agent"}, agent)).To(Succeed())
		g.Expect(agent.Status.DesiredNumberScheduled).To(BeNumerically(">=", 1))
		g.Expect(agent.Status.NumberReady).To(Equal(agent.Status.DesiredNumberScheduled), "node agent not ready")
		g.Expect(nodeAgentReadyNodes(ctx, g)).To(ContainElements(schedulableNodeNames(ctx)),
			"a ready node agent pod on every schedulable node")
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

// nodeAgentBenchmark is a benchmark of one 5-s run at 1 client on each destination, at
// a modest rate, which the container log holds without a rotation (the kubelet's stream
// can skip lines at one): simple-update's two modifying statements a transaction, at the
// pace of its commits.
func nodeAgentBenchmark(name string, destinations ...benchv1alpha1.Destination) *benchv1alpha1.LoggingBenchmark {
	benchmark := newBenchmark(name)
	benchmark.Spec.Baseline.Enabled = false
	benchmark.Spec.Destinations = destinations
	benchmark.Spec.Workload.Builtin = benchv1alpha1.WorkloadSimpleUpdate
	benchmark.Spec.Logging.Statement = benchv1alpha1.StatementMod
	benchmark.Spec.Workload.Clients = []int32{1}
	benchmark.Spec.Workload.Duration = metav1.Duration{Duration: 5 * time.Second}
	benchmark.Spec.DrainTimeout = metav1.Duration{Duration: 2 * time.Minute}
	return benchmark
}

// succeedWithNodeAgent creates the benchmark for this spec, prints its diagnostics and
// the node agent's logs if the spec fails, and waits until the benchmark succeeds.
func succeedWithNodeAgent(ctx context.Context, benchmark *benchv1alpha1.LoggingBenchmark) {
	createForThisSpec(ctx, benchmark)
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			printDiagnostics(benchmark, []string{"-n", nodeAgentNamespace, "logs", "daemonset/node-agent", "--tail=50"})
		}
	})
	waitForPhase(ctx, benchmark, benchv1alpha1.PhaseSucceeded)
}

// nodeAgentReadyNodes are the nodes where a node agent pod is ready; it prints each pod's
// node.
func nodeAgentReadyNodes(ctx context.Context, g Gomega) []string {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(ctx, pods, client.InNamespace(nodeAgentNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "node-agent"})).To(Succeed())
	var ready []string
	for _, pod := range pods.Items {
		isReady := podReady(pod)
		_, _ = fmt.Fprintf(GinkgoWriter, "node agent pod %s on %s, ready %t\n", pod.Name, pod.Spec.NodeName, isReady)
		if isReady {
			ready = append(ready, pod.Spec.NodeName)
		}
	}
	return ready
}

// nodeAgentSources counts the records of destination's runs since benchmark was created
// that the node agent shipped to the tenant, by the node whose agent shipped them and the
// pod whose container log held them.
func nodeAgentSources(ctx context.Context, tenant string, benchmark *benchv1alpha1.LoggingBenchmark,
	destination string,
) []lokiSample {
	query := fmt.Sprintf(`sum by (node, pod) (count_over_time({job="node-agent", namespace=%q} |~ %q [%s]))`,
		benchmarkNamespace, workload.TagPattern(destination), lokiRangeOf(benchmark))
	return lokiCounts(ctx, tenant, query)
}

// expectOnlyPrimaryShipped checks that, of the instance pods of the row's cluster, one
// container log alone holds records of the row's runs in the node agent's tenant, shipped
// by the agent of the node the primary ran on, and returns that pod's name and count. It
// prints every pod's count and node.
func expectOnlyPrimaryShipped(ctx context.Context, tenant string, benchmark *benchv1alpha1.LoggingBenchmark,
	row benchv1alpha1.Result,
) (pod string, count int64) {
	what := fmt.Sprintf("%s with %d clients", row.Destination, row.Clients)
	instancePod := regexp.MustCompile("^" + regexp.QuoteMeta(clusterOf(benchmark, row.Destination)) + "-[0-9]+$")
	var fromInstances []lokiSample
	for _, sample := range nodeAgentSources(ctx, tenant, benchmark, row.Destination) {
		_, _ = fmt.Fprintf(GinkgoWriter, "%s: the agent of %s shipped %d records of the runs from pod %s\n",
			what, sample.labels["node"], sample.count, sample.labels["pod"])
		if instancePod.MatchString(sample.labels["pod"]) {
			fromInstances = append(fromInstances, sample)
		}
	}
	Expect(fromInstances).To(HaveLen(1), "%s: one instance pod's container log holds the runs' records", what)
	Expect(row.Repeats).NotTo(BeEmpty(), what)
	Expect(fromInstances[0].labels["node"]).To(Equal(row.Repeats[0].ServerNode),
		"%s: shipped by the agent of the primary's node", what)
	return fromInstances[0].labels["pod"], fromInstances[0].count
}

// clusterOf is the name of the cluster that served destination, from the status.
func clusterOf(benchmark *benchv1alpha1.LoggingBenchmark, destination string) string {
	for _, status := range benchmark.Status.Destinations {
		if status.Name == destination {
			return status.ClusterName
		}
	}
	Fail(fmt.Sprintf("destination %s has no cluster in the status", destination))
	return ""
}

// kubeletPodLogsDir is where the kubelets keep the pods' logs, which the
// /var/log/containers links point into: their podLogsDir, read from each node's configz
// through the API server, /var/log/pods by default. The node agent's DaemonSet mounts one
// path on every node, so the nodes must agree.
func kubeletPodLogsDir(ctx context.Context) string {
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(nodes.Items).NotTo(BeEmpty())
	dirs := map[string][]string{}
	for _, node := range nodes.Items {
		body, err := clientset.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node.Name, "proxy", "configz").
			DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred(), "reading the kubelet's configz on node %s: %s", node.Name, body)
		var configz struct {
			KubeletConfig struct {
				PodLogsDir string `json:"podLogsDir"`
			} `json:"kubeletconfig"`
		}
		Expect(json.Unmarshal(body, &configz)).To(Succeed(), string(body))
		dir := cmp.Or(configz.KubeletConfig.PodLogsDir, "/var/log/pods")
		dirs[dir] = append(dirs[dir], node.Name)
	}
	Expect(dirs).To(HaveLen(1), "the kubelets keep pod logs in different folders, by node: %v", dirs)
	for dir := range dirs {
		return dir
	}
	return ""
}
