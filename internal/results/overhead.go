package results

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
)

const (
	// minPairs is the fewest repeats paired with the baseline's that make an interval.
	minPairs = 3
	// targetConfidence is the confidence an interval is chosen for, when the pairs allow.
	targetConfidence = 0.95
)

// ApplyOverhead sets each row's TPS loss against the reference destination's row at the
// same client count, its interval and its verdict. Aggregate's reference is the
// baseline placed as the row's destination (ReferenceOf); another destination tells two
// destinations apart, as the A/A test does.
// Repeats are paired by index: a pair ran in the same round of the schedule (Plan),
// close in time, so that a drift during the benchmark weighs on both of its sides, and
// the interval comes from the pairs' own overheads rather than from two aggregates each
// noisy on its own. A row without any pair falls back to the aggregated TPS of both
// rows. A faster-than-reference row keeps its negative overhead: it is noise worth
// seeing.
func ApplyOverhead(rows []v1alpha1.Result, reference string) {
	applyOverheads(rows, func(string) string { return reference })
}

// applyOverheads is ApplyOverhead with each destination's own reference, the destination
// named by referenceOf; a destination without one ("") keeps no overhead.
func applyOverheads(rows []v1alpha1.Result, referenceOf func(destination string) string) {
	type rowKey struct {
		destination string
		clients     int32
	}
	referenceRows := map[rowKey]v1alpha1.Result{}
	for _, row := range rows {
		if len(Successful(row.Repeats)) > 0 && row.TPS > 0 {
			referenceRows[rowKey{row.Destination, row.Clients}] = row
		}
	}
	for i := range rows {
		row := &rows[i]
		reference := referenceOf(row.Destination)
		base, ok := referenceRows[rowKey{reference, row.Clients}]
		if row.Destination == reference || !ok || len(Successful(row.Repeats)) == 0 {
			continue
		}
		pairs := pairedOverheads(base, *row)
		overhead := (base.TPS - row.TPS) / base.TPS * 100
		if len(pairs) > 0 {
			overhead = median(pairs)
		}
		row.OverheadPercent = &overhead
		row.OverheadAgainst = reference
		row.OverheadVerdict = v1alpha1.OverheadUnknown
		if interval, ok := medianInterval(pairs); ok {
			row.OverheadInterval = &interval
			row.OverheadVerdict = v1alpha1.OverheadWithinNoise
			if interval.LowPercent > 0 || interval.HighPercent < 0 {
				row.OverheadVerdict = v1alpha1.OverheadSignificant
			}
		}
	}
}

// Against returns a copy of rows with their overheads measured against the reference
// destination instead of those they carry (the status's are against the baseline), as
// ApplyOverhead pairs them: by round. It fails when no row is the reference's, naming
// the destinations there are.
func Against(rows []v1alpha1.Result, reference string) ([]v1alpha1.Result, error) {
	var names []string
	for _, row := range rows {
		if !slices.Contains(names, row.Destination) {
			names = append(names, row.Destination)
		}
	}
	if !slices.Contains(names, reference) {
		return nil, fmt.Errorf("no results of a destination named %q to measure overheads against; the results hold %s",
			reference, strings.Join(names, ", "))
	}
	against := make([]v1alpha1.Result, len(rows))
	for i, row := range rows {
		row.OverheadPercent, row.OverheadInterval, row.OverheadVerdict, row.OverheadAgainst = nil, nil, "", ""
		against[i] = row
	}
	ApplyOverhead(against, reference)
	return against, nil
}

// pairedOverheads returns, for each successful repeat of row, its TPS loss against the
// reference's successful repeat of the same index.
func pairedOverheads(baseline, row v1alpha1.Result) []float64 {
	baseTPS := map[int32]float64{}
	for _, r := range Successful(baseline.Repeats) {
		if r.TPS > 0 {
			baseTPS[r.Repeat] = r.TPS
		}
	}
	var overheads []float64
	for _, r := range Successful(row.Repeats) {
		if base, ok := baseTPS[r.Repeat]; ok {
			overheads = append(overheads, (base-r.TPS)/base*100)
		}
	}
	return overheads
}

// medianInterval returns the distribution-free confidence interval of the median of
// values: between the j-th smallest and the j-th largest value, which holds the median
// with probability 1 - 2·P(Binomial(n, ½) < j), for the largest j that keeps that at 95%
// or more; with fewer than 6 values only j = 1 is left, below 95%. It needs no
// assumption about the distribution of the overheads, which on a noisy machine is
// anything but normal. False with fewer than minPairs values.
func medianInterval(values []float64) (v1alpha1.OverheadInterval, bool) {
	n := len(values)
	if n < minPairs {
		return v1alpha1.OverheadInterval{}, false
	}
	sorted := slices.Sorted(slices.Values(values))
	j, confidence := 1, coverage(n, 1)
	for next := j + 1; 2*next <= n && coverage(n, next) >= targetConfidence; next++ {
		j, confidence = next, coverage(n, next)
	}
	return v1alpha1.OverheadInterval{
		LowPercent:        sorted[j-1],
		HighPercent:       sorted[n-j],
		ConfidencePercent: confidence * 100,
		Pairs:             int32(n),
	}, true
}

// coverage is the probability that the j-th smallest and j-th largest of n values
// enclose their median: 1 - 2·P(Binomial(n, ½) ≤ j-1).
func coverage(n, j int) float64 {
	below := 0.0
	for i := range j {
		below += binomial(n, i)
	}
	return 1 - 2*below*math.Pow(0.5, float64(n))
}

// binomial is n choose k.
func binomial(n, k int) float64 {
	result := 1.0
	for i := range k {
		result = result * float64(n-i) / float64(i+1)
	}
	return result
}

// NoiseText is the summary's word on noise: that no overhead was told apart from it,
// and which rows are noisy.
func NoiseText(rows []v1alpha1.Result) string {
	var withinNoise, significant bool
	var noisy, parts []string
	for _, row := range rows {
		withinNoise = withinNoise || row.OverheadVerdict == v1alpha1.OverheadWithinNoise
		significant = significant || row.OverheadVerdict == v1alpha1.OverheadSignificant
		if row.Noisy {
			noisy = append(noisy, RowName(row))
		}
	}
	if withinNoise && !significant {
		parts = append(parts, "no overhead is told apart from noise")
	}
	if len(noisy) > 0 {
		parts = append(parts, fmt.Sprintf("noisy (TPS varies by more than %d%%): %s",
			v1alpha1.NoisyCVPercent, strings.Join(noisy, ", ")))
	}
	return strings.Join(parts, "; ")
}
