package results

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/golden"
)

// TestMannWhitneyPValue against the exact p-values of the U distribution.
func TestMannWhitneyPValue(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		want float64
	}{
		{"3 against 3, apart: the smallest p-value there is", []float64{1, 2, 3}, []float64{4, 5, 6}, 2.0 / 20},
		{"5 against 5, apart", []float64{5, 1, 4, 2, 3}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		{"either direction", []float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 2.0 / 252},
		{"interleaved", []float64{1, 3, 5}, []float64{2, 4, 6}, 0.7},
		{"identical", []float64{1, 1}, []float64{1, 1}, 1},
	} {
		if got := mannWhitneyPValue(tc.x, tc.y); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: p = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func comparedRow(destination string, overhead float64, interval *v1alpha1.OverheadInterval, tps ...float64) v1alpha1.Result {
	return v1alpha1.Result{Destination: destination, Clients: 2, TPS: median(tps), Repeats: repeatsWithTPS(tps...),
		OverheadPercent: &overhead, OverheadInterval: interval}
}

func interval(low, high float64) *v1alpha1.OverheadInterval {
	return &v1alpha1.OverheadInterval{LowPercent: low, HighPercent: high, ConfidencePercent: 93.75, Pairs: 5}
}

// TestRenderComparison: a destination that got cheaper, one that did not change beyond
// noise, one without intervals, and rows only one side has.
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
	compared, unmatched := Compare(before, after)
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
		golden.Assert(t, filepath.Join("testdata", "compare."+string(f)+".golden"), out.Bytes())
	}
	if err := RenderComparison(&bytes.Buffer{}, FormatCSV, before, after); err == nil {
		t.Error("the comparison rendered as CSV, which it does not support")
	}
}
