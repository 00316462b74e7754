package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// The charts are computed here, coordinates included, and drawn by the page template:
// the template only places what it is given, and html/template escapes every text.

// palette is the Okabe-Ito colour-blind safe set (yellow darkened for a white page),
// followed by further colours distinct from it; MaxItems of spec.destinations is 12.
var palette = []string{
	"#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9",
	"#A08400", "#7F3C8D", "#17BECF", "#8C564B", "#B5BD22", "#E377C2",
}

const (
	baselineColor = "#4D4D4D"
	expectedColor = "#C8C8C8"
	droppedColor  = "#D62728"
	chartWidth    = 1040
	// droppedClass is the page's CSS class of dropped records, in the table and the charts.
	droppedClass = "dropped"
)

// The marks of a legend's keys, which page.html.tmpl draws.
const (
	markLine = "line"
	markBox  = "box"
)

// series is one destination as the charts show it.
type series struct {
	Name     string
	Type     v1alpha1.DestinationType
	Color    string
	Baseline bool
	rows     map[int32]v1alpha1.Result
}

func (s series) row(clients int32) (v1alpha1.Result, bool) {
	row, ok := s.rows[clients]
	return row, ok && len(results.Successful(row.Repeats)) > 0
}

// seriesOf lists the destinations of the spec in their order, then any destination that
// only the results know of (a spec edited after the run), each with its colour.
func seriesOf(b *v1alpha1.LoggingBenchmark) []series {
	var all []series
	index := map[string]int{}
	add := func(name string, t v1alpha1.DestinationType) {
		if _, seen := index[name]; seen {
			return
		}
		index[name] = len(all)
		all = append(all, series{
			Name: name, Type: t, Baseline: t == v1alpha1.DestinationNone, rows: map[int32]v1alpha1.Result{},
		})
	}
	for _, d := range b.Spec.EffectiveDestinations() {
		add(d.Name, d.Type)
	}
	for _, row := range b.Status.Results {
		add(row.Destination, row.Type)
		all[index[row.Destination]].rows[row.Clients] = row
	}
	colour := 0
	for i := range all {
		if all[i].Baseline {
			all[i].Color = baselineColor
			continue
		}
		all[i].Color = palette[colour%len(palette)]
		colour++
	}
	return all
}

// clientCounts are the client counts of the spec and the results, ascending; a ramp's
// are those it ran.
func clientCounts(b *v1alpha1.LoggingBenchmark) []int32 {
	var counts []int32
	if b.Spec.Workload.Ramp == nil {
		counts = slices.Clone(b.Spec.Workload.Clients)
	}
	for _, row := range b.Status.Results {
		counts = append(counts, row.Clients)
	}
	slices.Sort(counts)
	return slices.Compact(counts)
}

// plot is the frame every chart shares: the plot area, axes, ticks and labels.
type plot struct {
	Width, Height            px
	Left, Top, Right, Bottom px
	XTicks, YTicks           []tick
	XLabel, YLabel           string
	// ZeroY is where the value 0 lies on a vertical value axis.
	ZeroY px
}

type tick struct {
	At    px
	Label string
}

func newPlot(height, left float64) plot {
	const top, right, bottom = 20, 20, 50
	return plot{
		Width: chartWidth, Height: px(height),
		Left: px(left), Top: top, Right: px(chartWidth - right), Bottom: px(height - bottom),
	}
}

// valueAxis sets the vertical axis to a nice domain holding lo and hi and returns its
// scale.
func (p *plot) valueAxis(lo, hi float64, format func(float64) string) linearScale {
	domain, ticks := niceDomain(lo, hi, 5)
	scale := linearScale{lo: domain[0], hi: domain[1], from: float64(p.Bottom), to: float64(p.Top)}
	for _, t := range ticks {
		p.YTicks = append(p.YTicks, tick{At: scale.at(t), Label: format(t)})
	}
	p.ZeroY = scale.at(max(domain[0], min(0, domain[1])))
	return scale
}

// clientAxis spaces the client counts evenly, as they usually grow geometrically, and
// returns the centre of each and the width of its band.
func (p *plot) clientAxis(counts []int32) (centres []px, band float64) {
	band = float64(p.Right-p.Left) / float64(max(len(counts), 1))
	for i, c := range counts {
		centre := p.Left + px((float64(i)+0.5)*band)
		centres = append(centres, centre)
		p.XTicks = append(p.XTicks, tick{At: centre, Label: fmt.Sprint(c)})
	}
	p.XLabel = "clients"
	return centres, band
}

// legendEntry is one key of a chart's legend; Mark is markLine or markBox.
type legendEntry struct {
	Name, Color, Mark string
	Dashed            bool
}

func legendOf(all []series, mark string) []legendEntry {
	entries := make([]legendEntry, len(all))
	for i, s := range all {
		entries[i] = legendEntry{Name: s.Name, Color: s.Color, Mark: mark}
	}
	return entries
}

// point is a marker with the text shown when the pointer rests on it; a knee's is
// ringed and labelled.
type point struct {
	X, Y  px
	Title string
	Knee  bool
}

// errorBar spans a range of the value axis: one standard deviation either side of the
// TPS, or the confidence interval of an overhead.
type errorBar struct {
	X, Low, High, CapLeft, CapRight px
}

type tpsLine struct {
	Name, Color string
	// Path joins consecutive client counts with a result; a failed one breaks it.
	Path      string
	Points    []point
	ErrorBars []errorBar
	Repeats   []point
}

type tpsChart struct {
	plot
	Legend []legendEntry
	Lines  []tpsLine
	Notes  []string
}

// newTPSChart draws TPS against clients, one line per destination, with error bars of
// one standard deviation across repeats and every repeat as a small dot. Lines are
// nudged apart horizontally so that equal values stay visible.
func newTPSChart(all []series, counts []int32) tpsChart {
	chart := tpsChart{plot: newPlot(440, 80), Legend: legendOf(all, markLine)}
	var top float64
	for _, s := range all {
		for _, c := range counts {
			if row, ok := s.row(c); ok {
				top = max(top, row.TPS+row.TPSStdDev)
				for _, r := range results.Successful(row.Repeats) {
					top = max(top, r.TPS)
				}
			}
		}
	}
	y := chart.valueAxis(0, top, shortNumber)
	chart.YLabel = "transactions per second"
	centres, band := chart.clientAxis(counts)
	nudge := min(8, band/float64(3*len(all)))
	for k, s := range all {
		line := tpsLine{Name: s.Name, Color: s.Color}
		offset := px((float64(k) - float64(len(all)-1)/2) * nudge)
		var path strings.Builder
		joined := false
		for i, c := range counts {
			row, ok := s.row(c)
			if !ok {
				joined = false
				if _, failed := s.rows[c]; failed {
					chart.Notes = append(chart.Notes, fmt.Sprintf("%s at %d clients: every repeat failed", s.Name, c))
				}
				continue
			}
			x := centres[i] + offset
			verb := "L"
			if !joined {
				verb = "M"
			}
			fmt.Fprintf(&path, "%s%s %s ", verb, x, y.at(row.TPS))
			joined = true
			marker := point{X: x, Y: y.at(row.TPS), Knee: row.Knee,
				Title: fmt.Sprintf("%s, %d clients: %.1f TPS ±%.1f", s.Name, c, row.TPS, row.TPSStdDev)}
			if row.Knee {
				marker.Title += " (knee: the highest client count within the ramp's bounds)"
			}
			line.Points = append(line.Points, marker)
			if row.TPSStdDev > 0 {
				line.ErrorBars = append(line.ErrorBars, errorBar{X: x,
					Low: y.at(max(0, row.TPS-row.TPSStdDev)), High: y.at(row.TPS + row.TPSStdDev),
					CapLeft: x - 4, CapRight: x + 4})
			}
			for _, r := range results.Successful(row.Repeats) {
				line.Repeats = append(line.Repeats, point{X: x, Y: y.at(r.TPS),
					Title: fmt.Sprintf("%s, %d clients, repeat %d: %.1f TPS", s.Name, c, r.Repeat, r.TPS)})
			}
		}
		line.Path = strings.TrimSpace(path.String())
		chart.Lines = append(chart.Lines, line)
	}
	return chart
}

// bar is a rectangle with an optional label beside it.
type bar struct {
	X, Y, Width, Height px
	Color, Title        string
	Label               string
	LabelX, LabelY      px
	// Class styles the bar: "estimate" (dashed outline) or "dropped".
	Class string
}

// rectBetween is the bar from a to b on the vertical axis, whichever is higher.
func rectBetween(x, width, a, b px) bar {
	return bar{X: x, Width: width, Y: min(a, b), Height: max(a, b) - min(a, b)}
}

type overheadChart struct {
	plot
	Legend []legendEntry
	Bars   []bar
	// Intervals are the overheads' confidence intervals.
	Intervals []errorBar
	// Missing marks the destinations and client counts without an overhead.
	Missing []point
	Notes   []string
}

// newOverheadChart draws the overhead of each destination as grouped bars, one group
// per client count. It returns false when no row has an overhead (no baseline result),
// as an empty chart would suggest zero overhead.
func newOverheadChart(all []series, counts []int32, rows []v1alpha1.Result) (overheadChart, bool) {
	// The reference has no overhead against itself; a baseline has one only against
	// another destination.
	against, reference := OverheadAgainst(rows), ReferenceName(rows)
	logged := slices.DeleteFunc(slices.Clone(all), func(s series) bool {
		return s.Name == against || (s.Baseline && !hasOverhead(s))
	})
	chart := overheadChart{plot: newPlot(400, 80), Legend: legendOf(logged, markBox)}
	var lo, hi float64
	found := false
	for _, s := range logged {
		for _, row := range s.rows {
			if row.OverheadPercent != nil {
				lo, hi, found = min(lo, *row.OverheadPercent), max(hi, *row.OverheadPercent), true
			}
			if interval := row.OverheadInterval; interval != nil {
				lo, hi = min(lo, interval.LowPercent), max(hi, interval.HighPercent)
			}
		}
	}
	if !found {
		return chart, false
	}
	y := chart.valueAxis(lo, hi, func(v float64) string { return trimmedFloat(v) + "%" })
	chart.YLabel = "TPS lost against " + reference
	centres, band := chart.clientAxis(counts)
	width := band * 0.8 / float64(len(logged))
	for i, c := range counts {
		for k, s := range logged {
			x := centres[i] + px((float64(k)-float64(len(logged))/2)*width)
			row, ok := s.row(c)
			if !ok || row.OverheadPercent == nil {
				chart.Missing = append(chart.Missing, point{X: x + px(width/2), Y: chart.ZeroY,
					Title: fmt.Sprintf("%s, %d clients: no overhead (no result for it or for %s)", s.Name, c,
						reference)})
				continue
			}
			overhead := *row.OverheadPercent
			b := rectBetween(x+px(width*0.1), px(width*0.8), chart.ZeroY, y.at(overhead))
			b.Color = s.Color
			b.Title = fmt.Sprintf("%s, %d clients: %s overhead", s.Name, c, OverheadCell(row))
			b.Label = fmt.Sprintf("%.1f%%", overhead)
			b.LabelX = x + px(width/2)
			top, bottom := b.Y, b.Y+b.Height
			if interval := row.OverheadInterval; interval != nil {
				whisker := errorBar{X: b.LabelX, Low: y.at(interval.LowPercent), High: y.at(interval.HighPercent),
					CapLeft: b.LabelX - 4, CapRight: b.LabelX + 4}
				chart.Intervals = append(chart.Intervals, whisker)
				top, bottom = min(top, whisker.High), max(bottom, whisker.Low)
			}
			b.LabelY = top - 4
			if overhead < 0 {
				b.LabelY = bottom + 12
			}
			chart.Bars = append(chart.Bars, b)
		}
	}
	if len(chart.Missing) > 0 {
		chart.Notes = append(chart.Notes, "× marks a destination and client count without an overhead: "+
			"the run or "+reference+"'s run at that client count has no result.")
	}
	return chart, true
}

// recordsRow is one result row of the records chart: expected above delivered.
type recordsRow struct {
	Label            string
	LabelY           px
	Expected         bar
	Delivered        bar
	Dropped          *bar
	Failed           string
	FailedX, FailedY px
}

type recordsChart struct {
	plot
	Legend []legendEntry
	Rows   []recordsRow
	Notes  []string
}

// newRecordsChart compares the records each row expected with those delivered, as
// horizontal bars so that any number of rows stays legible. Drops are drawn in red to
// the expected length; estimated expectations have a dashed outline. The baseline logs
// no statements and is left out. It returns false when there is no row to show.
func newRecordsChart(all []series, counts []int32) (recordsChart, bool) {
	const rowHeight, barHeight, top = 44.0, 14.0, 20.0
	logged := slices.DeleteFunc(slices.Clone(all), func(s series) bool { return s.Baseline })
	var rows []v1alpha1.Result
	var most int64
	for _, s := range logged {
		for _, c := range counts {
			if row, ok := s.rows[c]; ok {
				rows = append(rows, row)
				most = max(most, row.Records.Expected, row.Records.Delivered)
			}
		}
	}
	chart := recordsChart{plot: newPlot(top+rowHeight*float64(len(rows))+50, 170)}
	if len(rows) == 0 {
		return chart, false
	}
	chart.Legend = append(legendOf(logged, markBox),
		legendEntry{Name: "expected", Color: expectedColor, Mark: markBox},
		legendEntry{Name: "expected (estimate)", Color: expectedColor, Mark: markBox, Dashed: true},
		legendEntry{Name: "dropped", Color: droppedColor, Mark: markBox})
	// The labels beside the bars take the room right of the plot.
	chart.Right -= 250
	domain, ticks := niceDomain(0, float64(most), 8)
	x := linearScale{lo: domain[0], hi: domain[1], from: float64(chart.Left), to: float64(chart.Right)}
	for _, t := range ticks {
		chart.XTicks = append(chart.XTicks, tick{At: x.at(t), Label: shortNumber(t)})
	}
	chart.XLabel = "log records, summed over the successful repeats"
	colours := map[string]string{}
	for _, s := range logged {
		colours[s.Name] = s.Color
	}
	zero := x.at(0)
	for i, row := range rows {
		rowTop := px(top + rowHeight*float64(i) + 4)
		label := fmt.Sprintf("%s · %d %s", row.Destination, row.Clients, plural(int(row.Clients), "client"))
		r := recordsRow{Label: label, LabelY: rowTop + barHeight + 4}
		if len(results.Successful(row.Repeats)) == 0 {
			r.Failed, r.FailedX, r.FailedY = "every repeat failed: no records counted", zero+6, r.LabelY
			chart.Rows = append(chart.Rows, r)
			continue
		}
		rec := row.Records
		expected := groupedInt(rec.Expected)
		r.Expected = bar{X: zero, Y: rowTop, Width: x.at(float64(rec.Expected)) - zero, Height: barHeight,
			Color: expectedColor, Title: "expected " + expected, Label: "expected " + expected}
		if rec.ExpectedIsEstimate {
			r.Expected.Class, r.Expected.Label = "estimate", "expected ~"+expected+" (estimate)"
		}
		r.Delivered = bar{X: zero, Y: rowTop + barHeight + 2, Width: x.at(float64(rec.Delivered)) - zero, Height: barHeight,
			Color: colours[row.Destination], Label: "delivered " + groupedInt(rec.Delivered)}
		r.Delivered.Title = r.Delivered.Label
		if rec.AccountingError != "" {
			r.Delivered.Label += " !"
			r.Delivered.Title += ": " + rec.AccountingError
			chart.Notes = append(chart.Notes,
				fmt.Sprintf("! %s at %d clients: %s", row.Destination, row.Clients, rec.AccountingError))
		}
		if dropped, _ := DroppedCell(rec, groupedInt); rec.KnownDropped() > 0 {
			// Late records sit between the delivered and the dropped ones, undrawn.
			arrived := x.at(float64(rec.Delivered + rec.ArrivedLate))
			bar := bar{X: arrived, Y: r.Delivered.Y, Width: x.at(float64(rec.KnownDropped())) - zero,
				Height: barHeight, Color: droppedColor, Class: droppedClass, Title: dropped + " dropped"}
			r.Dropped = &bar
			r.Delivered.Label += ", " + dropped + " dropped"
		}
		if rec.ArrivedLate > 0 {
			r.Delivered.Label += ", " + groupedInt(rec.ArrivedLate) + " late"
			chart.Notes = append(chart.Notes, LateNote(row))
		}
		if rec.Stages != nil {
			chart.Notes = append(chart.Notes, StagesNote(row))
		}
		if rec.DropReason != "" {
			chart.Notes = append(chart.Notes, DropNote(row))
		}
		if rec.Unverified > 0 {
			r.Delivered.Label += ", " + groupedInt(rec.Unverified) + " unverified"
		}
		chart.Notes = append(chart.Notes, RecordNotes(row)...)
		chart.Notes = append(chart.Notes, measurementNotes(row)...)
		for _, b := range []*bar{&r.Expected, &r.Delivered} {
			b.LabelX, b.LabelY = zero+max(r.Expected.Width, r.Delivered.Width)+6, b.Y+barHeight-3
		}
		chart.Rows = append(chart.Rows, r)
	}
	return chart, true
}

// MiddleX and MiddleY centre the axis labels; TickEnd is where the tick marks below the
// horizontal axis end.
func (p plot) MiddleX() px { return (p.Left + p.Right) / 2 }
func (p plot) MiddleY() px { return (p.Top + p.Bottom) / 2 }
func (p plot) TickEnd() px { return p.Bottom + 5 }

// hasOverhead tells whether any row of the series has an overhead.
func hasOverhead(s series) bool {
	for _, row := range s.rows {
		if row.OverheadPercent != nil {
			return true
		}
	}
	return false
}
