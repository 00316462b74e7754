package results

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/golden"
)

// goldenRows cover every marker: a baseline, an exact row with drops and their reason and
// an overhead with its interval, an
// estimate short of its lower bound, an accounting error, late records, a failed repeat
// among successful ones, a row that failed entirely, records logbench could not see (a
// rotation under its stream), CloudNativePG's sampler explaining a loss, duplicates
// stored by a retried push, and a destination with its own logging settings whose
// expected records were counted at the source while the others' were predicted.
func goldenRows() []v1alpha1.Result {
	spec := testSpec(v1alpha1.AggregateMedian, 1, 4)
	spec.Workload.Duration = metav1.Duration{Duration: 10 * time.Second}
	// A destination with settings of its own makes a settings matrix: the LOGGING column.
	spec.Logging.Statement = v1alpha1.StatementAll
	spec.Destinations = append(spec.Destinations,
		v1alpha1.Destination{Name: "json", Type: v1alpha1.DestinationJSONLog,
			Logging: &v1alpha1.LoggingOverride{Duration: new(true)}},
		v1alpha1.Destination{Name: "platform", Type: v1alpha1.DestinationStdout},
		v1alpha1.Destination{Name: "retried", Type: v1alpha1.DestinationLoki},
	)
	rotated := exact(6400, 37841, 20514)
	rotated.Records.Dropped, rotated.Records.Unverified = new(int64(0)), 17327
	rotated.Records.UnverifiedReason = "the kubelet rotated the container log while logbench followed it"
	rotated.Records.Sampler = &v1alpha1.SamplerCheck{Verdict: v1alpha1.SamplerUnknown,
		Message: "the kubelet rotated the container log under logbench's stream"}
	sampled := exact(15860, 158569, 2595)
	sampled.Records.Sampler = &v1alpha1.SamplerCheck{Verdict: v1alpha1.SamplerMatches, ReceivedMin: 158100,
		ReceivedMax: 159099, Windows: 11, Message: "the loss matches CloudNativePG's log sampler"}
	sampled.Records.DropReason = sampled.Records.Sampler.Message
	duplicated := exact(9000, 40280, 40392)
	duplicated.Records.Dropped, duplicated.Records.DroppedAtLeast = nil, new(int64(0))
	duplicated.Records.Duplicates = 112
	estimate := exact(9100, 91000, 90000)
	estimate.Records.Dropped, estimate.Records.ExpectedIsEstimate = nil, true
	estimate.Records.DroppedAtLeast = new(int64(1000))
	late := exact(14000, 140002, 139990)
	late.Records.ArrivedLate, late.Records.Dropped = 12, new(int64(0))
	late.Records.ExpectedSource = v1alpha1.ExpectedCounted
	overcount := exact(15000, 150000, 150010)
	overcount.Records.Dropped, overcount.Records.AccountingError = nil, "delivered 150010 records but expected 150000"
	return Aggregate(spec, map[RunKey]v1alpha1.RepeatResult{
		{"baseline", 1, 1}: exact(27300, 0, 0),
		{"baseline", 1, 2}: exact(27100, 0, 0),
		{"baseline", 1, 3}: exact(27200, 0, 0),
		{"baseline", 4, 1}: exact(49200, 0, 0),
		{"baseline", 4, 2}: exact(48800, 0, 0),
		{"csv", 1, 1}: withShipper(withLogBytes(withPause(
			withStages(exact(16100, 161002, 161002), 161002, 161002, 161002, new(int64(161002))),
			2.5,
		), 32_200_400), 3.1, 12.5, 38<<20),
		{"csv", 1, 2}: withDropReason(
			withStages(exact(15900, 159002, 158990), 159002, 159002, 158990, new(int64(158990))),
			"the shipper dropped 12 records (errors or retries exhausted)",
		),
		{"csv", 1, 3}:      withStages(exact(16000, 160002, 160002), 160002, 160002, 160002, new(int64(160002))),
		{"csv", 4, 1}:      withServer(exact(17100, 171002, 171002), 18.5, 10, new(int64(412<<20))),
		{"csv", 4, 2}:      failed("pgbench: exit status 1\nconnection to server failed"),
		{"stdout", 1, 1}:   estimate,
		{"stdout", 1, 2}:   overcount,
		{"stdout", 4, 1}:   failed("cluster not ready"),
		{"stdout", 4, 2}:   failed("cluster not ready"),
		{"json", 1, 1}:     late,
		{"platform", 1, 1}: rotated,
		{"platform", 4, 1}: sampled,
		{"retried", 1, 1}:  duplicated,
	})
}

// TestAggregateGolden: the rows of runs that cover every marker of the tables; the
// report renders a copy of them (internal/report/testdata/rows.json).
func TestAggregateGolden(t *testing.T) {
	got, err := json.MarshalIndent(goldenRows(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "aggregate.json.golden"), append(got, '\n'))
}
