package results

import (
	"math"
	"testing"
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
