package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

var compareHeader = []string{
	"DESTINATION", "CLIENTS", "TPS BEFORE", "TPS AFTER", "Δ TPS", "OVERHEAD BEFORE", "OVERHEAD AFTER", "Δ OVERHEAD",
}

func comparisonCells(c results.Comparison) []string {
	tpsDelta := fmt.Sprintf("%+.1f%%", c.TPSDeltaPercent)
	if c.TPSVerdict == v1alpha1.OverheadWithinNoise {
		tpsDelta = noiseMarker
	}
	tpsDelta += fmt.Sprintf(" (p=%.3f n=%d+%d)", c.TPSPValue, c.RepeatsBefore, c.RepeatsAfter)
	overheadDelta := missing
	if d := c.OverheadDeltaPoints; d != nil {
		overheadDelta = fmt.Sprintf("%+.1f pts", *d)
		switch c.OverheadVerdict {
		case v1alpha1.OverheadWithinNoise:
			overheadDelta = noiseMarker + " " + overheadDelta
		case v1alpha1.OverheadUnknown:
			overheadDelta += " (no intervals)"
		}
	}
	overheadOf := func(overhead *float64, interval *v1alpha1.OverheadInterval) string {
		return OverheadCell(v1alpha1.Result{OverheadPercent: overhead, OverheadInterval: interval})
	}
	return []string{
		c.Destination, strconv.Itoa(int(c.Clients)),
		fmt.Sprintf("%.1f", c.TPSBefore), fmt.Sprintf("%.1f", c.TPSAfter), tpsDelta,
		overheadOf(c.OverheadBefore, c.OverheadIntervalBefore), overheadOf(c.OverheadAfter, c.OverheadIntervalAfter),
		overheadDelta,
	}
}

func comparisonNotes(unmatched []string) []string {
	notes := make([]string, 0, 1+len(unmatched))
	notes = append(notes, "Δ TPS: after against before; "+noiseMarker+" when the Mann-Whitney U test of the "+
		"repeats' TPS gives p ≥ 0.05 (3 repeats a side can never reach it); Δ OVERHEAD: "+noiseMarker+
		" when the two overhead intervals overlap")
	for _, name := range unmatched {
		notes = append(notes, name+": not in both benchmarks with a successful repeat, not compared")
	}
	return notes
}

// RenderComparison writes the comparison of two benchmarks' rows as a table, Markdown
// or JSON.
func RenderComparison(w io.Writer, f Format, before, after []v1alpha1.Result) error {
	compared, unmatched := results.Compare(before, after)
	cells := make([][]string, len(compared))
	for i, c := range compared {
		cells[i] = comparisonCells(c)
	}
	switch f {
	case FormatTable:
		return writeTable(w, compareHeader, cells, comparisonNotes(unmatched))
	case FormatMarkdown:
		return writeMarkdown(w, compareHeader, cells, comparisonNotes(unmatched))
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Rows      []results.Comparison `json:"rows"`
			Unmatched []string             `json:"unmatched"`
		}{append([]results.Comparison{}, compared...), append([]string{}, unmatched...)})
	}
	return fmt.Errorf("the comparison is written as %s, %s or %s, not %s", FormatTable, FormatMarkdown, FormatJSON, f)
}
