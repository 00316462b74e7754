package results

import (
	"bytes"
	"io"
	"path/filepath"
	"strconv"
	"strings"
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

func TestRender(t *testing.T) {
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			var out bytes.Buffer
			if err := Render(&out, f, goldenRows()); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", string(f)+".golden"), out.Bytes())
		})
	}
}

func TestRenderEmpty(t *testing.T) {
	tests := []struct {
		format Format
		want   string
	}{
		{FormatJSON, "[]\n"},
		{FormatCSV, strings.Join(csvHeader, ",") + "\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			var out bytes.Buffer
			if err := Render(&out, tt.format, nil); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("Render(nil) = %q, want %q", out.String(), tt.want)
			}
		})
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in      string
		want    Format
		wantErr string
	}{
		{in: "table", want: FormatTable},
		{in: "JSON", want: FormatJSON},
		{in: "csv", want: FormatCSV},
		{in: "Markdown", want: FormatMarkdown},
		{in: "yaml", wantErr: `unknown output format "yaml": use one of table, json, csv, markdown`},
		{in: "", wantErr: `unknown output format ""`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFormat(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseFormat(%q) error = %v, want %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseFormat(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	if err := Render(&bytes.Buffer{}, Format("yaml"), nil); err == nil {
		t.Error("Render accepted an unknown format")
	}
}

// TestRenderRefusesNamesItDoesNotKnow: only ParseFormat's results are formats, so a name
// in another case is refused rather than rendered as nothing.
func TestRenderRefusesNamesItDoesNotKnow(t *testing.T) {
	for _, name := range []Format{"TABLE", "yaml"} {
		if err := Render(io.Discard, name, nil); err == nil || !strings.Contains(err.Error(), "use one of") {
			t.Errorf("Render(%q) error = %v, want the formats it knows", name, err)
		}
	}
}

// TestStagesNoteListsTheCountedStages: a stage that was not counted is left out, not
// shown as zero records.
func TestStagesNoteListsTheCountedStages(t *testing.T) {
	for name, tc := range map[string]struct {
		stages v1alpha1.RecordStages
		want   string
	}{
		"a shipping pipeline": {
			v1alpha1.RecordStages{Written: new(int64(10)), Read: new(int64(10)), Sent: new(int64(8)), LostAt: "sent"},
			"fluent/2 records by stage: written 10, read 10, sent 8; lost at sent",
		},
		"a node agent's pipeline": {
			v1alpha1.RecordStages{ContainerLog: new(int64(10)), Stored: new(int64(10))},
			"fluent/2 records by stage: container log 10, stored 10; no stage lost records",
		},
	} {
		t.Run(name, func(t *testing.T) {
			row := v1alpha1.Result{Destination: "fluent", Clients: 2, Records: v1alpha1.Records{Stages: &tc.stages}}
			if got := StagesNote(row); got != tc.want {
				t.Errorf("note %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDuplicatesAreALowerBoundUnlessCountedByIdentity(t *testing.T) {
	for _, tc := range []struct {
		stages *v1alpha1.RecordStages
		want   string
	}{
		{nil, "at least 10"},
		{&v1alpha1.RecordStages{Duplicates: 10}, "at least 10"},
		{&v1alpha1.RecordStages{Duplicates: 10, DuplicatesExact: true}, "10 (counted by identity)"},
	} {
		if got := duplicateCount(10, tc.stages); got != tc.want {
			t.Errorf("duplicates of stages %+v: %q, want %q", tc.stages, got, tc.want)
		}
	}
	// The tables' cell says the same: marked ≥ unless counted by identity.
	format := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, tc := range []struct {
		records v1alpha1.Records
		want    string
	}{
		{v1alpha1.Records{}, "0"},
		{v1alpha1.Records{Duplicates: 10}, "≥10"},
		{v1alpha1.Records{Duplicates: 10, Stages: &v1alpha1.RecordStages{Duplicates: 10}}, "≥10"},
		{v1alpha1.Records{Duplicates: 10, Stages: &v1alpha1.RecordStages{Duplicates: 10, DuplicatesExact: true}}, "10"},
	} {
		if got := DuplicatesCell(tc.records, format); got != tc.want {
			t.Errorf("duplicates cell of %+v: %q, want %q", tc.records, got, tc.want)
		}
	}
}
