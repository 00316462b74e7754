package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/logbench/logbench/api/v1alpha1"
)

// The largest benchmark admission accepts writes the largest status: 4 destinations and
// the baseline at 4 client counts and 10 repeats, (5 × 4) × (10 + 1) = MaxRowsAndRuns.
var _ = Describe("the largest status", func() {
	const (
		destinations = 4
		clientCounts = 4
		repeats      = 10
	)
	largestSpec := func(repeats int) string {
		return fmt.Sprintf("destinations: [%s]\nworkload: {clients: [%s], repeats: %d}",
			flowItems(destinations, "{name: d%d, type: CSVLog}"), flowItems(clientCounts, "%d"), repeats)
	}

	It("is accepted up to the bound, and stays under 1 MiB", func() {
		Expect((destinations + 1) * clientCounts * (repeats + 1)).To(Equal(v1alpha1.MaxRowsAndRuns))
		created := newBenchmark(largestSpec(repeats))
		Expect(k8sClient.Create(ctx, created)).To(Succeed())
		benchmark := &v1alpha1.LoggingBenchmark{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(created), benchmark)).To(Succeed())

		benchmark.Status = fullStatus(benchmark.Spec)
		document, err := json.Marshal(benchmark)
		Expect(err).NotTo(HaveOccurred())
		_, _ = fmt.Fprintf(GinkgoWriter, "the largest status: %d bytes\n", len(document))
		Expect(k8sClient.Status().Update(ctx, benchmark)).To(Succeed())
		Expect(len(document)).To(BeNumerically("<", 1<<20))
	})

	It("refuses one repeat more", func() {
		err := k8sClient.Create(ctx, newBenchmark(largestSpec(repeats+1)))
		Expect(err).To(MatchError(ContainSubstring("too many runs for one status")))
	})
})

// fullStatus is a status of spec with every field at its longest: every run finished
// with every optional figure and a drop reason of 512 bytes (the longest the agent
// composes is about half that), which each row repeats for all its runs, and messages
// at status.MaxMessageLength. A run has either figures or an error of at most that
// length, which is shorter.
func fullStatus(spec v1alpha1.LoggingBenchmarkSpec) v1alpha1.LoggingBenchmarkStatus {
	long := strings.Repeat("m", 1024)
	number := 123456.789012345
	count := int64(123456789012)
	usage := &v1alpha1.ProcessUsage{CPUSeconds: &number, WallSeconds: number, PeakMemoryBytes: &count}
	records := v1alpha1.Records{
		Expected: count, Delivered: count, ArrivedLate: count, Dropped: &count, DroppedAtLeast: &count,
		ExpectedIsEstimate: true, DropReason: strings.Repeat("r", 512),
		Duplicates: count, Unverified: count, UnverifiedReason: strings.Repeat("u", 512),
		Sampler: &v1alpha1.SamplerCheck{Verdict: v1alpha1.SamplerExceeds, ReceivedMin: count, ReceivedMax: count,
			Windows: 1 << 30, Message: strings.Repeat("s", 512)},
		Stages: &v1alpha1.RecordStages{ContainerLog: &count, Written: &count, Read: &count, Sent: &count,
			Stored: &count, LostAt: "containerLog", InputPausedSeconds: number, Duplicates: count,
			UnverifiedAt: "containerLog", Unverified: count},
	}
	rowRecords := records
	rowRecords.DropReason = strings.Repeat(" | repeat 10: "+records.DropReason, int(spec.Workload.Repeats))
	rowRecords.UnverifiedReason = strings.Repeat(" | repeat 10: "+records.UnverifiedReason, int(spec.Workload.Repeats))
	node := strings.Repeat("n", 63)
	// Every setting a destination can override, at its longest.
	settings := "statement=mod,minDurationStatement=2147483647,duration=on,connections=on,disconnections=on," +
		"trackIOTiming=on,pgaudit=read+write+function+role+ddl+misc+misc_set,pgauditParameter=on,linePrefix=" +
		strings.Repeat("p", 256)
	now := metav1.NewTime(time.Now())
	status := v1alpha1.LoggingBenchmarkStatus{
		Phase:          v1alpha1.PhaseSucceeded,
		Progress:       v1alpha1.Progress{RunsDone: 1, RunsTotal: 1, Text: long, Current: long},
		Schedule:       &v1alpha1.Schedule{Seed: count},
		StartTime:      &now,
		CompletionTime: &now,
		Summary: v1alpha1.Summary{WorstOverhead: "100.0%", DroppedRecords: count, DroppedAtLeast: count,
			Dropped: long, Noise: long, UnverifiedRecords: count, DuplicateRecords: count},
	}
	for _, condition := range []string{v1alpha1.ConditionReady, v1alpha1.ConditionProgressing, v1alpha1.ConditionDegraded,
		v1alpha1.ConditionComplete, v1alpha1.ConditionFailed} {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: condition, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRunsFailed, Message: long,
		})
	}
	destinations := append([]v1alpha1.Destination{{Name: "baseline", Type: v1alpha1.DestinationNone}}, spec.Destinations...)
	for _, destination := range destinations {
		status.Destinations = append(status.Destinations, v1alpha1.DestinationStatus{
			Name: destination.Name, Type: destination.Type, ClusterName: strings.Repeat("c", 50),
			State: v1alpha1.DestinationPending, Message: long,
		})
		status.Knees = append(status.Knees, v1alpha1.Knee{Destination: destination.Name, Clients: 1000,
			StoppedAt: 1000, Reason: long})
		for _, clients := range spec.Workload.Clients {
			row := v1alpha1.Result{
				Destination: destination.Name, Type: destination.Type, Clients: clients,
				TPS: number, TPSStdDev: number, TPSCoefficientOfVariation: number, LatencyAvgMs: number,
				LatencyStdDevMs: number, OverheadPercent: &number,
				OverheadInterval: &v1alpha1.OverheadInterval{LowPercent: number, HighPercent: number,
					ConfidencePercent: number, Pairs: 20},
				OverheadVerdict: v1alpha1.OverheadSignificant, Noisy: true, Records: rowRecords, DrainSeconds: number,
				LogBytesPerRecord: &number, LogGigabytesPerHour: &number, ServerCPUCores: &number,
				ServerCPUMsPer1kTransactions: &number, ServerPeakMemoryBytes: &count, ShipperCPUCores: &number,
				ShipperCPUMsPer1kRecords: &number, ShipperPeakMemoryBytes: &count, Knee: true, RampStop: long,
				Logging: settings, OverheadAgainst: strings.Repeat("a", 63),
			}
			status.Summary.DropsUnknown = append(status.Summary.DropsUnknown, fmt.Sprintf("%s/%d", destination.Name, clients))
			for repeat := range spec.Workload.Repeats {
				status.Schedule.Runs = append(status.Schedule.Runs,
					fmt.Sprintf("%s/%d/%d", destination.Name, clients, repeat+1))
				row.Repeats = append(row.Repeats, v1alpha1.RepeatResult{
					Repeat: repeat + 1, TPS: number, LatencyAvgMs: number, LatencyStdDevMs: number,
					Transactions: count, FailedTransactions: count, Records: records, DrainSeconds: number,
					DrainEnd: v1alpha1.DrainComplete, DrainCurve: []v1alpha1.DrainPoint{
						{AfterSeconds: number, Delivered: count}, {AfterSeconds: number, Delivered: count},
						{AfterSeconds: number, Delivered: count}, {AfterSeconds: number, Delivered: count},
						{AfterSeconds: number, Delivered: count},
					},
					LogBytes: &count, Server: usage, Shipper: usage, ClientNode: node, ServerNode: node,
				})
			}
			status.Results = append(status.Results, row)
		}
	}
	return status
}
