package report

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/golden"
	"github.com/logbench/logbench/internal/results"
)

// comparedRow is a row with the given overhead and the repeats' TPS, whose median is
// the row's TPS.
func comparedRow(destination string, overhead float64, interval *v1alpha1.OverheadInterval, tps ...float64) v1alpha1.Result {
	repeats := make([]v1alpha1.RepeatResult, len(tps))
	for i, value := range tps {
		repeats[i] = v1alpha1.RepeatResult{Repeat: int32(i + 1), TPS: value}
	}
	return v1alpha1.Result{Destination: destination, Clients: 2, TPS: slices.Sorted(slices.Values(tps))[len(tps)/2],
		Repeats: repeats, OverheadPercent: &overhead, OverheadInterval: interval}
}

func interval(low, high float64) *v1alpha1.OverheadInterval {
	return &v1alpha1.OverheadInterval{LowPercent: low, HighPercent: high, ConfidencePercent: 93.75, Pairs: 5}
}

// TestRenderComparison: a destination that got cheaper, one that did not change beyond
// noise, one without intervals, and rows only one side has, compared and rendered.
func TestRenderComparison(t *testing.T) {
	before := []v1alpha1.Result{
		comparedRow("stderr", 60, interval(55, 63), 400, 410, 420, 430, 440),
		comparedRow("csvlog", 40, interval(35, 45), 600, 610, 620, 630, 640),
		comparedRow("jsonlog", 50, nil, 500),
		comparedRow("gone", 10, nil, 900),
	}
	after := []v1alpha1.Result{
		comparedRow("stderr", 20, interval(18, 25), 800, 810, 820, 830, 840),
		comparedRow("csvlog", 41, interval(36, 44), 605, 615, 600, 635, 625),
		comparedRow("jsonlog", 48, nil, 520),
		comparedRow("new", 5, nil, 950),
	}
	compared, unmatched := results.Compare(before, after)
	if len(compared) != 3 || compared[0].TPSVerdict != v1alpha1.OverheadSignificant ||
		compared[0].OverheadVerdict != v1alpha1.OverheadSignificant ||
		compared[1].TPSVerdict != v1alpha1.OverheadWithinNoise || compared[1].OverheadVerdict != v1alpha1.OverheadWithinNoise ||
		compared[2].OverheadVerdict != v1alpha1.OverheadUnknown {
		t.Errorf("Compare = %+v", compared)
	}
	if len(unmatched) != 2 || unmatched[0] != "new/2" || unmatched[1] != "gone/2" {
		t.Errorf("unmatched = %v, want new/2 and gone/2", unmatched)
	}
	for _, f := range []Format{FormatTable, FormatMarkdown, FormatJSON} {
		var out bytes.Buffer
		if err := RenderComparison(&out, f, before, after); err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, filepath.Join("testdata", "comparison."+string(f)+".golden"), out.Bytes())
	}
	if err := RenderComparison(&bytes.Buffer{}, FormatCSV, before, after); err == nil {
		t.Error("the comparison rendered as CSV, which it does not support")
	}
}
