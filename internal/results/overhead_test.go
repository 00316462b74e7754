package results

import (
	"fmt"
	"math"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// TestMedianInterval: the interval is between order statistics chosen for 95% coverage,
// and says the confidence it really has when the pairs are too few for 95%.
func TestMedianInterval(t *testing.T) {
	for _, tc := range []struct {
		values         []float64
		low, high      float64
		confidence     float64
		wantAnInterval bool
	}{
		{values: []float64{1, 2}},
		{[]float64{3, 1, 2}, 1, 3, 75, true},
		{[]float64{4, 1, 3, 2}, 1, 4, 87.5, true},
		{[]float64{5, 1, 4, 2, 3}, 1, 5, 93.75, true},
		{[]float64{6, 1, 5, 2, 4, 3}, 1, 6, 96.875, true},
		// With 8 values the second smallest and largest cover only 93%; with 9, 96.1%.
		{[]float64{8, 1, 7, 2, 6, 3, 5, 4}, 1, 8, 100 * (1 - 2.0/256), true},
		{[]float64{9, 1, 8, 2, 7, 3, 6, 4, 5}, 2, 8, 100 * (1 - 2*10.0/512), true},
	} {
		got, ok := medianInterval(tc.values)
		if ok != tc.wantAnInterval {
			t.Fatalf("medianInterval(%v) ok = %v", tc.values, ok)
		}
		if !ok {
			continue
		}
		if got.LowPercent != tc.low || got.HighPercent != tc.high || math.Abs(got.ConfidencePercent-tc.confidence) > 1e-9 ||
			got.Pairs != int32(len(tc.values)) {
			t.Errorf("medianInterval(%v) = %+v, want [%v, %v] at %v%%", tc.values, got, tc.low, tc.high, tc.confidence)
		}
	}
}

func repeatsWithTPS(tps ...float64) []v1alpha1.RepeatResult {
	repeats := make([]v1alpha1.RepeatResult, len(tps))
	for i, v := range tps {
		repeats[i] = v1alpha1.RepeatResult{Repeat: int32(i + 1), TPS: v}
	}
	return repeats
}

// TestApplyOverheadVerdicts: the overhead is the median of the paired overheads, with a
// verdict from its interval; a row the baseline's drift would make look better or worse
// is judged on its pairs.
func TestApplyOverheadVerdicts(t *testing.T) {
	baseline := v1alpha1.Result{Destination: "baseline", Clients: 2, TPS: 1000, Repeats: repeatsWithTPS(1000, 800, 1200)}
	for _, tc := range []struct {
		name         string
		row          v1alpha1.Result
		wantOverhead float64
		wantVerdict  v1alpha1.OverheadVerdict
	}{
		{"paired losses are significant even when the machine drifts",
			v1alpha1.Result{TPS: 600, Repeats: repeatsWithTPS(600, 480, 720)}, 40, v1alpha1.OverheadSignificant},
		{"gains and losses are noise",
			v1alpha1.Result{TPS: 1000, Repeats: repeatsWithTPS(990, 820, 1190)}, 0.8333333333333334, v1alpha1.OverheadWithinNoise},
		{"two pairs make no interval",
			v1alpha1.Result{TPS: 700, Repeats: repeatsWithTPS(600, 800)}, 20, v1alpha1.OverheadUnknown},
		{"no pair falls back to the aggregated TPS",
			v1alpha1.Result{TPS: 500, Repeats: []v1alpha1.RepeatResult{{Repeat: 7, TPS: 500}}}, 50, v1alpha1.OverheadUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := tc.row
			row.Destination, row.Clients = "csv", 2
			rows := []v1alpha1.Result{baseline, row}
			ApplyOverhead(rows, "baseline")
			got := rows[1]
			if got.OverheadPercent == nil || math.Abs(*got.OverheadPercent-tc.wantOverhead) > 1e-9 ||
				got.OverheadVerdict != tc.wantVerdict {
				t.Errorf("overhead %v, verdict %s; want %v, %s", got.OverheadPercent, got.OverheadVerdict,
					tc.wantOverhead, tc.wantVerdict)
			}
			if (got.OverheadInterval != nil) != (tc.wantVerdict != v1alpha1.OverheadUnknown) {
				t.Errorf("interval %+v with verdict %s", got.OverheadInterval, got.OverheadVerdict)
			}
			if rows[0].OverheadPercent != nil || rows[0].OverheadVerdict != "" {
				t.Errorf("the baseline got an overhead: %+v", rows[0])
			}
		})
	}
}

func TestSummarizeNoise(t *testing.T) {
	overhead := 1.25
	withinNoise := v1alpha1.Result{Destination: "csv", Clients: 2, OverheadPercent: &overhead,
		OverheadVerdict:  v1alpha1.OverheadWithinNoise,
		OverheadInterval: &v1alpha1.OverheadInterval{LowPercent: -3, HighPercent: 4.5, ConfidencePercent: 93.75, Pairs: 5},
		Noisy:            true}
	want := "no overhead is told apart from noise; noisy (TPS varies by more than 10%): csv/2"
	if got := Summarize([]v1alpha1.Result{withinNoise}).Noise; got != want {
		t.Errorf("Summarize().Noise = %q, want %q", got, want)
	}
}

// TestAgainst: against a destination, its rows lose the overhead they had against the
// baseline, the others are paired with its repeats, and an A/A pair, the same TPS
// shuffled within the rounds' drift, reads as noise.
func TestAgainst(t *testing.T) {
	rows := []v1alpha1.Result{
		{Destination: "baseline", Type: v1alpha1.DestinationNone, Clients: 2, TPS: 1000, Repeats: repeatsWithTPS(1000, 900, 1100, 950, 1050, 1000)},
		{Destination: "statement", Clients: 2, TPS: 800, Repeats: repeatsWithTPS(800, 700, 900, 760, 840, 800)},
		{Destination: "again", Clients: 2, TPS: 800, Repeats: repeatsWithTPS(790, 715, 880, 770, 850, 800)},
		{Destination: "both", Clients: 2, TPS: 400, Repeats: repeatsWithTPS(400, 350, 450, 380, 420, 400)},
	}
	ApplyOverhead(rows, "baseline")
	against, err := Against(rows, "statement")
	if err != nil {
		t.Fatal(err)
	}
	if rows[1].OverheadPercent == nil || rows[1].OverheadAgainst != "baseline" {
		t.Fatalf("Against changed the rows it was given: %+v", rows[1])
	}
	if s := against[1]; s.OverheadPercent != nil || s.OverheadVerdict != "" || s.OverheadAgainst != "" {
		t.Errorf("the reference keeps an overhead: %+v", s)
	}
	if a := against[2]; a.OverheadVerdict != v1alpha1.OverheadWithinNoise || a.OverheadAgainst != "statement" {
		t.Errorf("the A/A pair reads %s against %q (%s), want WithinNoise against statement", a.OverheadVerdict,
			a.OverheadAgainst, overheadText(a))
	}
	if b := against[3]; b.OverheadVerdict != v1alpha1.OverheadSignificant || math.Abs(*b.OverheadPercent-50) > 1e-9 {
		t.Errorf("both against statement: %s %s, want a significant 50%%", b.OverheadVerdict, overheadText(b))
	}
	if base := against[0]; base.OverheadPercent == nil || *base.OverheadPercent >= 0 {
		t.Errorf("the baseline against statement: %s, want a gain", overheadText(base))
	}
	if _, err := Against(rows, "syslog"); err == nil ||
		err.Error() != `no results of a destination named "syslog" to measure overheads against; the results hold baseline, statement, again, both` {
		t.Errorf("against an unknown destination: %v", err)
	}
}

// overheadText shows a row's overhead in a failure's message.
func overheadText(row v1alpha1.Result) string {
	if row.OverheadPercent == nil {
		return "no overhead"
	}
	return fmt.Sprintf("%.1f%%", *row.OverheadPercent)
}

// TestAggregateMeasuresEachPlacementAgainstItsBaseline: a destination placed otherwise
// than the workload is measured against the baseline placed as it is, never against the
// workload's, so that the client's placement weighs on both sides alike; that baseline
// keeps no overhead.
func TestAggregateMeasuresEachPlacementAgainstItsBaseline(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{
			{Name: "csv", Type: v1alpha1.DestinationCSVLog},
			{Name: "none-same", Type: v1alpha1.DestinationNone, Placement: v1alpha1.PlacementSameNode},
			{Name: "csv-same", Type: v1alpha1.DestinationCSVLog, Placement: v1alpha1.PlacementSameNode},
		},
		Baseline: v1alpha1.BaselineSpec{Enabled: true},
		Workload: v1alpha1.WorkloadSpec{Clients: []int32{1}, Placement: v1alpha1.PlacementApart},
	}
	runs := map[RunKey]v1alpha1.RepeatResult{}
	for repeat := int32(1); repeat <= 3; repeat++ {
		for destination, tps := range map[string]float64{"baseline": 1000, "csv": 800, "none-same": 500, "csv-same": 450} {
			runs[RunKey{destination, 1, repeat}] = exact(tps, 10, 10)
		}
	}
	want := map[string]struct {
		against  string
		overhead float64
	}{"csv": {"baseline", 20}, "csv-same": {"none-same", 10}}
	for _, row := range Aggregate(spec, runs) {
		w, measured := want[row.Destination]
		switch {
		case !measured && row.OverheadPercent != nil:
			t.Errorf("%s, a baseline, has an overhead: %s against %q", row.Destination, overheadText(row), row.OverheadAgainst)
		case measured && (row.OverheadPercent == nil || math.Abs(*row.OverheadPercent-w.overhead) > 1e-9 ||
			row.OverheadAgainst != w.against):
			t.Errorf("%s: %s against %q, want %.0f%% against %q", row.Destination, overheadText(row), row.OverheadAgainst,
				w.overhead, w.against)
		}
	}
	if got := BaselineName(spec); got != "baseline" {
		t.Errorf("BaselineName = %q, want the one placed as the workload", got)
	}
}
