package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/manifest"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/schedule"
)

const (
	// maxDestinations counts the baseline with the 12 destinations a spec may list, and
	// maxClientCounts the client counts of a list or a ramp by step.
	maxDestinations = 13
	maxClientCounts = 16
	maxRepeats      = 20
	// maxLinePrefixLength is the MaxLength of LinePrefix.
	maxLinePrefixLength = 256
	// maxClusterNameLength is what CloudNativePG allows a Cluster's name.
	maxClusterNameLength = 50
)

// longest is a text of n characters whose JSON is the longest there is: encoding/json
// writes < as \u003c.
func longest(n int) string { return strings.Repeat("<", n) }

// The largest status: for each number of repeats, the most result rows and runs admission
// accepts, every run finished with every figure and with every text its agent or a Job's
// annotation could report far beyond what the status keeps, all in the characters whose
// JSON is longest; the status is built by the code the operator and local mode use, its
// rows without their repeats as the operator keeps them (each run is a
// LoggingBenchmarkRun), and the texts that code composes from bounded parts are then set
// to the message bound.
var _ = Describe("the largest status", func() {
	It("stays under 1 MiB for every shape admission accepts, and the API server stores the largest", func() {
		var largestSpec string
		largestSize := 0
		for repeats := 1; repeats <= maxRepeats; repeats++ {
			destinations, clientCounts := largestShape(repeats)
			spec := shapeSpec(destinations, clientCounts, repeats)
			benchmark, err := manifest.Decode([]byte(fmt.Sprintf(
				`{"apiVersion": %q, "kind": "LoggingBenchmark", "metadata": {"name": "largest"}, "spec": %s}`,
				v1alpha1.GroupVersion, spec)))
			Expect(err).NotTo(HaveOccurred(), "admission refuses %d destinations × %d client counts × %d repeats",
				destinations, clientCounts, repeats)
			benchmark.Status = fullStatus(benchmark)
			document, err := json.Marshal(benchmark)
			Expect(err).NotTo(HaveOccurred())
			_, _ = fmt.Fprintf(GinkgoWriter, "%2d destinations × %2d client counts × %2d repeats: %d bytes\n",
				destinations, clientCounts, repeats, len(document))
			Expect(len(document)).To(BeNumerically("<", 1<<20),
				"%d destinations × %d client counts × %d repeats", destinations, clientCounts, repeats)
			if len(document) > largestSize {
				largestSpec, largestSize = spec, len(document)
			}
		}

		created := newBenchmark(largestSpec)
		Expect(k8sClient.Create(ctx, created)).To(Succeed())
		benchmark := &v1alpha1.LoggingBenchmark{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(created), benchmark)).To(Succeed())
		benchmark.Status = fullStatus(benchmark)
		Expect(k8sClient.Status().Update(ctx, benchmark)).To(Succeed())
	})

	It("admits 1,000 runs and refuses one repeat more", func() {
		// 10 × 10 × 10 = MaxRuns.
		Expect(10 * 10 * 10).To(Equal(v1alpha1.MaxRuns))
		Expect(k8sClient.Create(ctx, newBenchmark(shapeSpec(10, 10, 10)))).To(Succeed())
		err := k8sClient.Create(ctx, newBenchmark(shapeSpec(10, 10, 11)))
		Expect(err).To(MatchError(ContainSubstring("too many runs")))
	})

	It("refuses more rows than MaxRows", func() {
		// 10 × 15 = MaxRows.
		Expect(10 * 15).To(Equal(v1alpha1.MaxRows))
		Expect(k8sClient.Create(ctx, newBenchmark(shapeSpec(10, 15, 1)))).To(Succeed())
		err := k8sClient.Create(ctx, newBenchmark(shapeSpec(10, 16, 1)))
		Expect(err).To(MatchError(ContainSubstring("too many result rows for one status")))
	})
})

// largestShape is the most destinations (the baseline included) and client counts whose
// rows admission accepts with repeats, the most destinations among equals.
func largestShape(repeats int) (destinations, clientCounts int) {
	rows := min(v1alpha1.MaxRows, v1alpha1.MaxRuns/repeats)
	for d := 2; d <= maxDestinations; d++ {
		for c := 1; c <= maxClientCounts; c++ {
			if d*c <= rows && d*c >= destinations*clientCounts {
				destinations, clientCounts = d, c
			}
		}
	}
	return destinations, clientCounts
}

// shapeSpec is the JSON of a spec with destinations (the baseline included) and
// clientCounts, each destination's name and line prefix at their longest, which the
// status repeats in every row.
func shapeSpec(destinations, clientCounts, repeats int) string {
	linePrefix := "%a" + longest(maxLinePrefixLength-2)
	listed := make([]map[string]any, 0, destinations-1)
	for i := range destinations - 1 {
		listed = append(listed, map[string]any{
			"name": fmt.Sprintf("%020d", i), "type": v1alpha1.DestinationFluentBitSidecar,
			"logging": map[string]any{"linePrefix": linePrefix},
		})
	}
	clients := make([]int, 0, clientCounts)
	for c := range clientCounts {
		clients = append(clients, 1000-c)
	}
	spec, err := json.Marshal(map[string]any{
		"destinations": listed,
		"logging":      map[string]any{"linePrefix": linePrefix},
		"workload":     map[string]any{"clients": clients, "repeats": repeats},
	})
	Expect(err).NotTo(HaveOccurred())
	return string(spec)
}

// fullStatus is the status of benchmark once every run finished with fullRun, and its
// destinations failed with a message at its bound.
func fullStatus(benchmark *v1alpha1.LoggingBenchmark) v1alpha1.LoggingBenchmarkStatus {
	benchmark = benchmark.DeepCopy()
	spec := &benchmark.Spec
	planned := schedule.Plan(spec, math.MinInt64, nil)
	observation := benchstatus.Observation{Planned: planned, Seed: math.MinInt64, Finished: map[results.RunKey]v1alpha1.RepeatResult{},
		Done: true}
	for _, run := range planned {
		observation.Finished[run] = fullRun()
	}
	for _, destination := range spec.EffectiveDestinations() {
		observation.Destinations = append(observation.Destinations, v1alpha1.DestinationStatus{
			Name: destination.Name, Type: destination.Type, ClusterName: strings.Repeat("c", maxClusterNameLength),
			State: v1alpha1.DestinationFailed, Message: benchstatus.Truncate(longest(64 << 10)),
		})
	}
	benchstatus.Set(benchmark, observation)
	for _, row := range benchmark.Status.Results {
		Expect(row.Repeats).To(HaveLen(int(spec.Workload.Repeats)))
		Expect(slices.ContainsFunc(row.Repeats, func(r v1alpha1.RepeatResult) bool { return r.Error != "" })).To(BeFalse())
	}

	// Texts the status composes from bounded parts, at the message bound instead.
	message := benchstatus.Truncate(longest(64 << 10))
	current := &benchmark.Status
	current.Progress.Text, current.Progress.Current = message, message
	for _, condition := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded,
		v1alpha1.ConditionComplete, v1alpha1.ConditionFailed} {
		found := meta.FindStatusCondition(current.Conditions, condition)
		Expect(found).NotTo(BeNil(), condition)
		found.Message = message
	}
	for _, destination := range spec.EffectiveDestinations() {
		current.Knees = append(current.Knees, v1alpha1.Knee{Destination: destination.Name, Clients: 1000,
			StoppedAt: 1000, Reason: message})
	}
	number, count := 123456.789012345, int64(123456789012)
	for i := range current.Results {
		row := &current.Results[i]
		// Figures the rows' runs leave out in some combination or other.
		row.Noisy = true
		row.OverheadPercent, row.LogBytesPerRecord, row.LogGigabytesPerHour = &number, &number, &number
		row.OverheadInterval = &v1alpha1.OverheadInterval{LowPercent: number, HighPercent: number,
			ConfidencePercent: number, Pairs: maxRepeats}
		row.OverheadVerdict, row.OverheadAgainst = v1alpha1.OverheadSignificant, fmt.Sprintf("%020d", 0)
		// A ramp stops at one row of each destination.
		if last := i == len(current.Results)-1 || current.Results[i+1].Destination != row.Destination; last {
			row.Knee, row.RampStop = true, message
		}
	}
	// Every row noisy and unknown: the summary lists them all.
	current.Summary = results.Summarize(current.Results)
	Expect(current.Summary.DropsUnknown).To(HaveLen(len(current.Results)))
	current.Summary.WorstOverhead, current.Summary.Dropped = message, message
	for i := range current.Results {
		current.Results[i].Records.Dropped, current.Results[i].Records.DroppedAtLeast = &count, &count
	}
	benchstatus.DropRepeats(current)
	return *current
}

// fullRun is a run with every figure, at its longest, and every text far longer than
// the status keeps. A failed run holds an error instead, which is shorter.
func fullRun() v1alpha1.RepeatResult {
	text := longest(64 << 10)
	number := 123456.789012345
	count := int64(123456789012)
	usage := &v1alpha1.ProcessUsage{CPUSeconds: &number, WallSeconds: number, PeakMemoryBytes: &count}
	point := v1alpha1.DrainPoint{AfterSeconds: number, Delivered: count}
	return v1alpha1.RepeatResult{
		TPS: number, LatencyAvgMs: number, LatencyStdDevMs: number, Transactions: count, FailedTransactions: count,
		Records: v1alpha1.Records{
			Expected: count, Delivered: count, ArrivedLate: count, Dropped: &count, DroppedAtLeast: &count,
			ExpectedIsEstimate: true, DropReason: text, Duplicates: count, Unverified: count, UnverifiedReason: text,
			AccountingError: text,
			Sampler: &v1alpha1.SamplerCheck{Verdict: v1alpha1.SamplerUnknown, ReceivedMin: count, ReceivedMax: count,
				Windows: math.MaxInt32, Message: text},
			Stages: &v1alpha1.RecordStages{ContainerLog: &count, Written: &count, Read: &count, Forwarded: &count,
				Received: &count, Sent: &count, Stored: &count, Duplicates: count, DuplicatesExact: true,
				UnverifiedAt: text, Unverified: count, LostAt: text, InputPausedSeconds: number},
		},
		DrainSeconds: number, DrainEnd: v1alpha1.DrainComplete,
		DrainCurve: []v1alpha1.DrainPoint{point, point, point, point, point},
		LogBytes:   &count, Server: usage, Shipper: usage, ClientNode: text, ServerNode: text,
	}
}
