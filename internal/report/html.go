package report

import (
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

//go:embed page.html.tmpl
var pageSource string

var pageTemplate = template.Must(template.New("page").Parse(pageSource))

// page is everything the HTML template shows.
type page struct {
	Name      string
	Facts     []fact
	Table     []tableRow
	Failures  []failure
	Estimates bool
	// ExpectedSource says where the rows' expected records come from (counted at the
	// source or predicted).
	ExpectedSource string
	// OverheadNotes explain the overhead column's intervals and verdicts, KneeNotes
	// where each destination's ramp ended.
	OverheadNotes, KneeNotes []string
	TPS                      tpsChart
	Overhead                 overheadChart
	// Against names what the overheads are measured against, as the table's
	// explanation says it.
	Against string
	// ShowLogging adds the destinations' effective logging to the table: a settings
	// matrix.
	ShowLogging bool
	// HasOverhead and HasRecords are false when the chart would be empty.
	HasOverhead bool
	Records     recordsChart
	HasRecords  bool
	// Drains are the drain curves of shipping destinations' repeats.
	Drains []drainCurve
}

// drainCurve is how one repeat's records reached a shipping destination after pgbench
// ended.
type drainCurve struct {
	Run, End, Points string
}

// tableRow is one result row with its figures formatted and its state as CSS classes.
type tableRow struct {
	Destination, Type, Color string
	Logging                  string
	Clients                  int32
	Knee                     bool
	Repeats                  string
	Failed                   bool
	TPS, StdDev, Latency     string
	Overhead, OverheadClass  string
	Expected, Delivered      string
	Dropped, DroppedClass    string
	Unverified, Duplicates   string
	Drain                    string
	LogPerRecord, LogPerHour string
	// The server's CPU cores, CPU milliseconds per 1,000 transactions and memory peak.
	ServerCores, ServerCPUPerTransactions, ServerMemory string
	// The shipper's CPU cores, CPU milliseconds per 1,000 records and memory peak.
	ShipperCores, ShipperCPUPerRecords, ShipperMemory string
}

// failure is a failed repeat with its full error, which the tables shorten, or a repeat
// measured after failed attempts (Error empty), with the errors of those attempts.
type failure struct {
	Run, Error string
	Earlier    []failedAttempt
}

// failedAttempt is an attempt of a repeat that failed before the recorded one.
type failedAttempt struct {
	Attempt int
	Error   string
}

func renderHTML(w io.Writer, b *v1alpha1.LoggingBenchmark) error {
	if err := checkChartable(b.Status.Results); err != nil {
		return err
	}
	all := seriesOf(b)
	counts := clientCounts(b)
	p := page{
		Name: b.Name, Facts: describe(b), TPS: newTPSChart(all, counts),
		OverheadNotes: OverheadNotes(b.Status.Results), KneeNotes: KneeNotes(b.Status.Results),
		Against: ReferenceName(b.Status.Results), ShowLogging: LoggingVaries(b.Status.Results),
		ExpectedSource: ExpectedSourceNote(b.Status.Results),
	}
	p.Overhead, p.HasOverhead = newOverheadChart(all, counts, b.Status.Results)
	p.Records, p.HasRecords = newRecordsChart(all, counts)
	colours := map[string]string{}
	for _, s := range all {
		colours[s.Name] = s.Color
	}
	for _, row := range b.Status.Results {
		p.Table = append(p.Table, newTableRow(row, colours[row.Destination]))
		p.Estimates = p.Estimates || row.Records.ExpectedIsEstimate
		for _, r := range row.Repeats {
			if len(r.DrainCurve) > 0 {
				p.Drains = append(p.Drains, newDrainCurve(row, r))
			}
			if r.Error != "" || len(r.FailedAttempts) > 0 {
				on, _ := attempts(r)
				which := fmt.Sprintf("%s, %d clients, repeat %d", row.Destination, row.Clients, r.Repeat)
				if r.Error == "" {
					which += ", measured" + on
				}
				found := failure{Run: which, Error: r.Error}
				for i, err := range r.FailedAttempts {
					found.Earlier = append(found.Earlier, failedAttempt{Attempt: i + 1, Error: err})
				}
				p.Failures = append(p.Failures, found)
			}
		}
	}
	var out strings.Builder
	if err := pageTemplate.Execute(&out, p); err != nil {
		return fmt.Errorf("rendering the HTML report: %w", err)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// implausible bounds the figures the charts accept: no benchmark measures a trillion
// TPS, and refusing such values keeps every coordinate finite.
const implausible = 1e12

// checkChartable refuses figures that are not measurements (edited or corrupt status)
// rather than drawing them as NaN.
func checkChartable(rows []v1alpha1.Result) error {
	for _, row := range rows {
		figures := map[string]float64{"tps": row.TPS, "tpsStdDev": row.TPSStdDev}
		if row.OverheadPercent != nil {
			figures["overheadPercent"] = *row.OverheadPercent
		}
		for _, r := range row.Repeats {
			figures[fmt.Sprintf("repeats[%d].tps", r.Repeat)] = r.TPS
		}
		if row.Records.Expected < 0 || row.Records.Delivered < 0 {
			return fmt.Errorf("result %s/%d: negative record counts are not measurements; "+
				"the status has been altered or corrupted", row.Destination, row.Clients)
		}
		for field, v := range figures {
			if !(math.Abs(v) < implausible) {
				return fmt.Errorf("result %s/%d: %s is %v, which is not a measurement; the status has been altered or corrupted",
					row.Destination, row.Clients, field, v)
			}
		}
	}
	return nil
}

func newTableRow(row v1alpha1.Result, colour string) tableRow {
	ok := len(results.Successful(row.Repeats))
	t := tableRow{
		Destination: row.Destination, Type: string(row.Type), Logging: row.Logging, Color: colour,
		Clients: row.Clients, Knee: row.Knee,
		Repeats: fmt.Sprintf("%d/%d", ok, len(row.Repeats)), Failed: ok == 0,
	}
	if t.Failed {
		return t
	}
	t.TPS = fmt.Sprintf("%.1f", row.TPS)
	t.StdDev = fmt.Sprintf("±%.1f (%.1f%%)", row.TPSStdDev, row.TPSCoefficientOfVariation)
	t.Latency = fmt.Sprintf("%.3f ±%.3f", row.LatencyAvgMs, row.LatencyStdDevMs)
	t.Overhead = "–"
	if o := row.OverheadPercent; o != nil {
		t.Overhead = OverheadCell(row)
		if row.OverheadVerdict != v1alpha1.OverheadWithinNoise && *o > 0 {
			t.OverheadClass = "worse"
		}
	}
	t.Expected = groupedInt(row.Records.Expected)
	if row.Records.ExpectedIsEstimate {
		t.Expected = "~" + t.Expected
	}
	t.Delivered = groupedInt(row.Records.Delivered)
	if late := row.Records.ArrivedLate; late > 0 {
		t.Delivered += fmt.Sprintf(" (+%s late)", groupedInt(late))
	}
	if row.Records.AccountingError != "" {
		t.Delivered += " !"
	}
	var known bool
	if t.Dropped, known = DroppedCell(row.Records, groupedInt); !known {
		t.Dropped = "–"
	}
	if row.Records.KnownDropped() > 0 {
		t.DroppedClass = droppedClass
	}
	t.Unverified, t.Duplicates = groupedInt(row.Records.Unverified), DuplicatesCell(row.Records, groupedInt)
	t.Drain = fmt.Sprintf("%.1f", row.DrainSeconds)
	t.LogPerRecord = cmp.Or(LogBytesPerRecordCell(row), "–")
	t.LogPerHour = cmp.Or(LogGigabytesPerHourCell(row), "–")
	t.ServerCores = cmp.Or(CoresCell(row.ServerCPUCores), "–")
	t.ServerCPUPerTransactions = cmp.Or(CPUPer1kCell(row.ServerCPUMsPer1kTransactions), "–")
	t.ServerMemory = cmp.Or(MemoryCell(row.ServerPeakMemoryBytes), "–")
	t.ShipperCores = cmp.Or(CoresCell(row.ShipperCPUCores), "–")
	t.ShipperCPUPerRecords = cmp.Or(CPUPer1kCell(row.ShipperCPUMsPer1kRecords), "–")
	t.ShipperMemory = cmp.Or(MemoryCell(row.ShipperPeakMemoryBytes), "–")
	return t
}

// newDrainCurve shows each point of a repeat's drain curve as the time after pgbench
// ended and the share of the expected records counted by then.
func newDrainCurve(row v1alpha1.Result, r v1alpha1.RepeatResult) drainCurve {
	points := make([]string, len(r.DrainCurve))
	for i, point := range r.DrainCurve {
		share := "–"
		if r.Records.Expected > 0 {
			share = fmt.Sprintf("%.1f%%", float64(point.Delivered)/float64(r.Records.Expected)*100)
		}
		points[i] = fmt.Sprintf("%.1f s: %s", point.AfterSeconds, share)
	}
	return drainCurve{
		Run:    fmt.Sprintf("%s, %d clients, repeat %d", row.Destination, row.Clients, r.Repeat),
		End:    string(r.DrainEnd),
		Points: strings.Join(points, " · "),
	}
}
