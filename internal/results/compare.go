package results

import (
	"math"

	"github.com/logbench/logbench/api/v1alpha1"
)

// significanceLevel is the p-value below which a TPS change is significant, as
// benchstat's default alpha.
const significanceLevel = 0.05

// Comparison sets one result row of a benchmark (before) beside the same destination
// and client count of another (after), as benchstat sets an old run beside a new one.
type Comparison struct {
	Destination string `json:"destination"`
	Clients     int32  `json:"clients"`
	// TPSBefore and TPSAfter are the rows' aggregated TPS.
	TPSBefore float64 `json:"tpsBefore"`
	TPSAfter  float64 `json:"tpsAfter"`
	// TPSDeltaPercent is the change of TPS from before to after, in percent.
	TPSDeltaPercent float64 `json:"tpsDeltaPercent"`
	// TPSPValue is the exact two-sided p-value of the Mann-Whitney U test on the two
	// rows' repeats: how likely a difference at least this large is between two sets of
	// runs of one and the same destination.
	TPSPValue float64 `json:"tpsPValue"`
	// Repeats are the successful repeats on each side.
	RepeatsBefore int `json:"repeatsBefore"`
	RepeatsAfter  int `json:"repeatsAfter"`
	// TPSVerdict is Significant when TPSPValue is below 0.05, else WithinNoise.
	TPSVerdict v1alpha1.OverheadVerdict `json:"tpsVerdict"`
	// OverheadBefore and OverheadAfter are the rows' overheads, with their intervals.
	OverheadBefore         *float64                   `json:"overheadBefore,omitempty"`
	OverheadAfter          *float64                   `json:"overheadAfter,omitempty"`
	OverheadIntervalBefore *v1alpha1.OverheadInterval `json:"overheadIntervalBefore,omitempty"`
	OverheadIntervalAfter  *v1alpha1.OverheadInterval `json:"overheadIntervalAfter,omitempty"`
	// OverheadDeltaPoints is after's overhead minus before's, in percentage points.
	OverheadDeltaPoints *float64 `json:"overheadDeltaPoints,omitempty"`
	// OverheadVerdict is Significant when the two intervals do not overlap, WithinNoise
	// when they do, Unknown when a side has no interval.
	OverheadVerdict v1alpha1.OverheadVerdict `json:"overheadVerdict,omitempty"`
}

// Compare pairs the rows of two benchmarks by destination and client count, in after's
// row order; unmatched names the rows, of either side, that the other lacks or that have
// no successful repeat.
func Compare(before, after []v1alpha1.Result) (compared []Comparison, unmatched []string) {
	beforeRows := map[string]v1alpha1.Result{}
	for _, row := range before {
		beforeRows[RowName(row)] = row
	}
	seen := map[string]bool{}
	for _, row := range after {
		name := RowName(row)
		old, ok := beforeRows[name]
		seen[name] = ok
		if !ok || len(Successful(old.Repeats)) == 0 || len(Successful(row.Repeats)) == 0 {
			unmatched = append(unmatched, name)
			continue
		}
		compared = append(compared, compare(old, row))
	}
	for _, row := range before {
		if name := RowName(row); !seen[name] {
			unmatched = append(unmatched, name)
		}
	}
	return compared, unmatched
}

func compare(before, after v1alpha1.Result) Comparison {
	beforeTPS, afterTPS := tpsOf(Successful(before.Repeats)), tpsOf(Successful(after.Repeats))
	c := Comparison{
		Destination: after.Destination, Clients: after.Clients,
		TPSBefore: before.TPS, TPSAfter: after.TPS,
		TPSPValue:     mannWhitneyPValue(beforeTPS, afterTPS),
		RepeatsBefore: len(beforeTPS), RepeatsAfter: len(afterTPS),
		TPSVerdict:     v1alpha1.OverheadWithinNoise,
		OverheadBefore: before.OverheadPercent, OverheadAfter: after.OverheadPercent,
		OverheadIntervalBefore: before.OverheadInterval, OverheadIntervalAfter: after.OverheadInterval,
	}
	if before.TPS != 0 {
		c.TPSDeltaPercent = (after.TPS - before.TPS) / before.TPS * 100
	}
	if c.TPSPValue < significanceLevel {
		c.TPSVerdict = v1alpha1.OverheadSignificant
	}
	if before.OverheadPercent != nil && after.OverheadPercent != nil {
		delta := *after.OverheadPercent - *before.OverheadPercent
		c.OverheadDeltaPoints = &delta
		c.OverheadVerdict = v1alpha1.OverheadUnknown
		if b, a := before.OverheadInterval, after.OverheadInterval; b != nil && a != nil {
			c.OverheadVerdict = v1alpha1.OverheadWithinNoise
			if a.LowPercent > b.HighPercent || a.HighPercent < b.LowPercent {
				c.OverheadVerdict = v1alpha1.OverheadSignificant
			}
		}
	}
	return c
}

func tpsOf(repeats []v1alpha1.RepeatResult) []float64 {
	tps := make([]float64, len(repeats))
	for i, r := range repeats {
		tps[i] = r.TPS
	}
	return tps
}

// mannWhitneyPValue is the exact two-sided p-value of the Mann-Whitney U test of x
// against y, from the distribution of U over every ordering of the two samples, which
// is exact without ties; a tie counts half, as in U itself. It makes no assumption
// about the distribution of TPS, which on a noisy machine is anything but normal. With
// 3 repeats a side the smallest p-value is 0.1: too few to ever be significant.
func mannWhitneyPValue(x, y []float64) float64 {
	u := 0.0
	for _, a := range x {
		for _, b := range y {
			switch {
			case a < b:
				u++
			case a == b:
				u += 0.5
			}
		}
	}
	counts := uDistribution(len(x), len(y))
	var total, atMost, atLeast float64
	for value, ways := range counts {
		total += ways
		if float64(value) <= u {
			atMost += ways
		}
		if float64(value) >= u {
			atLeast += ways
		}
	}
	return math.Min(1, 2*math.Min(atMost, atLeast)/total)
}

// uDistribution counts, for each value of U, the orderings of m and n values that give
// it: ways(m, n, u) = ways(m-1, n, u-n) + ways(m, n-1, u).
func uDistribution(m, n int) []float64 {
	// ways[i][j] is the distribution for i and j values.
	ways := make([][][]float64, m+1)
	for i := range ways {
		ways[i] = make([][]float64, n+1)
		for j := range ways[i] {
			dist := make([]float64, i*j+1)
			switch {
			case i == 0 || j == 0:
				dist[0] = 1
			default:
				for u := range dist {
					if u >= j && u-j < len(ways[i-1][j]) {
						dist[u] += ways[i-1][j][u-j]
					}
					if u < len(ways[i][j-1]) {
						dist[u] += ways[i][j-1][u]
					}
				}
			}
			ways[i][j] = dist
		}
	}
	return ways[m][n]
}
