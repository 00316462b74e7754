package report

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/schedule"
	"github.com/logbench/logbench/internal/text"
)

// RowsFormats lists the formats RenderRows accepts, for flag help.
var RowsFormats = []Format{FormatTable, FormatJSON, FormatCSV, FormatMarkdown}

// ParseRowsFormat reads the name of a format of RenderRows, case-insensitively.
func ParseRowsFormat(name string) (Format, error) {
	return text.ParseChoice("output format", name, RowsFormats)
}

// RenderRows writes the result rows in the given format: the table `logbench run`
// prints, and the rows of the report's terminal and Markdown formats.
func RenderRows(w io.Writer, f Format, rows []v1alpha1.Result) error {
	switch f {
	case FormatTable:
		return renderTable(w, rows)
	case FormatJSON:
		return renderJSON(w, rows)
	case FormatCSV:
		return renderCSV(w, rows)
	case FormatMarkdown:
		return renderMarkdown(w, rows)
	}
	// ParseRowsFormat gives the names RenderRows takes; anything else is a caller's mistake.
	return fmt.Errorf("unknown output format %q: use one of %s", f, RowsFormats)
}

var humanHeader = []string{
	"DESTINATION", "TYPE", "CLIENTS", "REPEATS", "TPS", "±STDDEV(CV%)", "LATENCY(ms)",
	"OVERHEAD", "EXPECTED", "DELIVERED", "DROPPED", "UNVERIFIED", "DUPLICATES", "DRAIN(s)", "LOG(B/rec)", "LOG(GB/h)",
	"CPU(cores)", "CPU(ms/1k tx)", "MEM(MiB)", "SHIPPER CPU(cores)", "SHIPPER CPU(ms/1k rec)", "SHIPPER MEM(MiB)",
}

// Markers in human-readable cells; the footnotes explain them.
const (
	estimateMarker   = "~"
	accountingMarker = "!"
	kneeMarker       = "^"
	missing          = "-"
)

// humanCells is one row as the table and Markdown show it. A row without a successful
// repeat has no figures at all: zeros would read as measurements.
func humanCells(row v1alpha1.Result) []string {
	ok := len(results.Successful(row.Repeats))
	cells := []string{
		row.Destination,
		string(row.Type),
		strconv.Itoa(int(row.Clients)),
		fmt.Sprintf("%d/%d", ok, len(row.Repeats)),
	}
	if row.Knee {
		cells[2] += kneeMarker
	}
	if ok == 0 {
		for range humanHeader[len(cells):] {
			cells = append(cells, missing)
		}
		return cells
	}
	overhead := OverheadCell(row)
	expected := strconv.FormatInt(row.Records.Expected, 10)
	if row.Records.ExpectedIsEstimate {
		expected = estimateMarker + expected
	}
	delivered := strconv.FormatInt(row.Records.Delivered, 10)
	if row.Records.AccountingError != "" {
		delivered += accountingMarker
	}
	dropped, known := DroppedCell(row.Records, formatInt)
	if !known {
		dropped = missing
	}
	return append(cells,
		fmt.Sprintf("%.1f", row.TPS),
		fmt.Sprintf("±%.1f (%.1f%%)", row.TPSStdDev, row.TPSCoefficientOfVariation),
		fmt.Sprintf("%.3f ±%.3f", row.LatencyAvgMs, row.LatencyStdDevMs),
		overhead, expected, delivered, dropped, formatInt(row.Records.Unverified), DuplicatesCell(row.Records, formatInt),
		fmt.Sprintf("%.1f", row.DrainSeconds),
		cmp.Or(LogBytesPerRecordCell(row), missing), cmp.Or(LogGigabytesPerHourCell(row), missing),
		cmp.Or(CoresCell(row.ServerCPUCores), missing), cmp.Or(CPUPer1kCell(row.ServerCPUMsPer1kTransactions), missing),
		cmp.Or(MemoryCell(row.ServerPeakMemoryBytes), missing),
		cmp.Or(CoresCell(row.ShipperCPUCores), missing), cmp.Or(CPUPer1kCell(row.ShipperCPUMsPer1kRecords), missing),
		cmp.Or(MemoryCell(row.ShipperPeakMemoryBytes), missing),
	)
}

// CoresCell shows the CPU cores of a row's server, shipper or receiver, "" when absent.
func CoresCell(cores *float64) string {
	return optional(cores, func(v float64) string { return fmt.Sprintf("%.2f", v) })
}

// CPUPer1kCell shows CPU milliseconds per 1,000 transactions (server) or records
// (shipper), "" when absent.
func CPUPer1kCell(milliseconds *float64) string {
	return optional(milliseconds, func(v float64) string { return fmt.Sprintf("%.1f", v) })
}

// MemoryCell shows a memory peak in MiB, "" when absent.
func MemoryCell(peak *int64) string {
	return optional(peak, func(v int64) string { return fmt.Sprintf("%.0f", float64(v)/(1<<20)) })
}

// LogBytesPerRecordCell shows a row's log bytes per record, "" when absent.
func LogBytesPerRecordCell(row v1alpha1.Result) string {
	return optional(row.LogBytesPerRecord, func(v float64) string { return fmt.Sprintf("%.0f", v) })
}

// LogGigabytesPerHourCell shows a row's log volume an hour, "" when absent.
func LogGigabytesPerHourCell(row v1alpha1.Result) string {
	return optional(row.LogGigabytesPerHour, func(v float64) string { return fmt.Sprintf("%.2f", v) })
}

// lowerBoundMarker marks a drop that is a lower bound.
const lowerBoundMarker = "≥"

// DroppedCell shows a row's drops, exact or as a lower bound marked ≥, with format
// writing the number; false when they are unknown.
func DroppedCell(r v1alpha1.Records, format func(int64) string) (string, bool) {
	switch {
	case r.Dropped != nil:
		return format(*r.Dropped), true
	case r.DroppedAtLeast != nil:
		return lowerBoundMarker + format(*r.DroppedAtLeast), true
	}
	return "", false
}

// DuplicatesCell shows a row's duplicates with format, marked ≥ when they are a lower
// bound: found by count rather than by each stored record's identity.
func DuplicatesCell(r v1alpha1.Records, format func(int64) string) string {
	if r.Duplicates > 0 && !duplicatesCountedByIdentity(r.Stages) {
		return lowerBoundMarker + format(r.Duplicates)
	}
	return format(r.Duplicates)
}

// footnotes explain the markers, say why records were dropped and list failed repeats
// and those measured after failed attempts, one line each.
func footnotes(rows []v1alpha1.Result) []string {
	var estimates bool
	var accounting, late, drops, failures []string
	for _, row := range rows {
		run := results.RowName(row)
		if len(results.Successful(row.Repeats)) > 0 {
			estimates = estimates || row.Records.ExpectedIsEstimate
			if row.Records.AccountingError != "" {
				accounting = append(accounting, fmt.Sprintf("%s %s: %s", accountingMarker, run, row.Records.AccountingError))
			}
			if row.Records.Stages != nil {
				drops = append(drops, StagesNote(row))
			}
			if row.Records.ArrivedLate > 0 {
				late = append(late, LateNote(row))
			}
			if row.Records.DropReason != "" {
				drops = append(drops, DropNote(row))
			}
			drops = append(drops, RecordNotes(row)...)
			drops = append(drops, measurementNotes(row)...)
		}
		for _, r := range row.Repeats {
			on, earlier := attempts(r)
			switch {
			case r.Error != "":
				failures = append(failures, fmt.Sprintf("%s repeat %d failed%s: %s%s", run, r.Repeat, on,
					firstLine(r.Error), earlier))
			case earlier != "":
				failures = append(failures, fmt.Sprintf("%s repeat %d was measured%s%s", run, r.Repeat, on, earlier))
			}
		}
	}
	notes := append(KneeNotes(rows), OverheadNotes(rows)...)
	if source := ExpectedSourceNote(rows); source != "" {
		notes = append(notes, source)
	}
	if placement := PlacementNote(rows); placement != "" {
		notes = append(notes, placement)
	}
	if estimates {
		notes = append(
			notes,
			estimateMarker+" expected is an estimate (log_min_duration_statement above 0 or failed transactions), "+
				"a lower bound: dropped is at least ("+lowerBoundMarker+") the records missing below it, unknown when none are",
		)
	}
	notes = append(notes, accounting...)
	notes = append(notes, late...)
	notes = append(notes, drops...)
	return append(notes, failures...)
}

// ExpectedSourceNote says where the rows' expected records come from: counted at the
// source, by the server itself, or predicted; "" when no row has a measurement.
func ExpectedSourceNote(rows []v1alpha1.Result) string {
	var counted, predicted []string
	for _, row := range rows {
		switch {
		case len(results.Successful(row.Repeats)) == 0:
		case row.Records.ExpectedSource == v1alpha1.ExpectedCounted:
			counted = append(counted, results.RowName(row))
		default:
			predicted = append(predicted, results.RowName(row))
		}
	}
	switch {
	case len(counted) == 0 && len(predicted) == 0:
		return ""
	case len(predicted) == 0:
		return "expected: " + countedAtTheSource + " in every row"
	case len(counted) == 0:
		return "expected: " + predictedFromTheRuns + " in every row"
	}
	return fmt.Sprintf("expected: %s in %s; %s in %s", countedAtTheSource, strings.Join(counted, ", "),
		predictedFromTheRuns, strings.Join(predicted, ", "))
}

// How reports name the sources of expected records.
const (
	countedAtTheSource   = "counted at the source (the server's own count of the run's records, logbench_counter)"
	predictedFromTheRuns = "predicted (from pgbench's counts and the logging settings)"
)

// PlacementNote says whether the clients competed with their servers for a node's cores,
// from the nodes the successful repeats recorded, naming the rows where they did when
// only some did; "" when no repeat recorded both nodes (local runs).
func PlacementNote(rows []v1alpha1.Result) string {
	var runs, sameNode int
	var shared []string
	for _, row := range rows {
		rowShared := false
		for _, r := range results.Successful(row.Repeats) {
			if r.ClientNode == "" || r.ServerNode == "" {
				continue
			}
			runs++
			if r.ClientNode == r.ServerNode {
				sameNode++
				rowShared = true
			}
		}
		if rowShared {
			shared = append(shared, results.RowName(row))
		}
	}
	switch {
	case runs == 0:
		return ""
	case sameNode == 0:
		return fmt.Sprintf("placement: the client ran on another node than the server in every run (%d)", runs)
	case sameNode == runs:
		return fmt.Sprintf("placement: the client ran on the server's node, competing for its cores, in every run (%d)", runs)
	}
	return fmt.Sprintf("placement: the client ran on the server's node, competing for its cores, in %d of %d runs (%s)",
		sameNode, runs, strings.Join(shared, ", "))
}

// OverheadNotes explain the overhead column: how it is computed and its interval read,
// and which rows have none or are noisy.
func OverheadNotes(rows []v1alpha1.Result) []string {
	var intervals, unknown bool
	for _, row := range rows {
		intervals = intervals || row.OverheadInterval != nil
		unknown = unknown || row.OverheadVerdict == v1alpha1.OverheadUnknown
	}
	reference := ReferenceName(rows) + "'s"
	var notes []string
	if intervals {
		notes = append(notes, "overhead: median over the repeats paired with "+reference+"; [low, high] holds it "+
			"with the confidence its pairs allow (95% from 6 pairs; 93.75%, 87.5%, 75% with 5, 4, 3); "+
			noiseMarker+" marks an overhead within noise, whose interval holds 0")
	}
	if unknown {
		notes = append(notes, "an overhead without [low, high] comes from fewer than 3 repeats paired with "+
			reference+": too few to tell it from noise")
	}
	if noise := results.NoiseText(rows); noise != "" {
		notes = append(notes, noise)
	}
	return notes
}

// OverheadAgainst is the destination the rows' overheads are measured against; "" when
// none has one, or rows written before they named it.
func OverheadAgainst(rows []v1alpha1.Result) string {
	for _, row := range rows {
		if row.OverheadAgainst != "" {
			return row.OverheadAgainst
		}
	}
	return ""
}

// OverheadAgainstText names what the rows' overheads are measured against: the one
// reference, or, where destinations placed apart have their own, each reference with
// its destinations: "baseline for csvlog; none-same for csvlog-same".
func OverheadAgainstText(rows []v1alpha1.Result) string {
	var references []string
	measured := map[string][]string{}
	for _, row := range rows {
		against := row.OverheadAgainst
		if against == "" || slices.Contains(measured[against], row.Destination) {
			continue
		}
		if measured[against] == nil {
			references = append(references, against)
		}
		measured[against] = append(measured[against], row.Destination)
	}
	if len(references) < 2 {
		return OverheadAgainst(rows)
	}
	parts := make([]string, len(references))
	for i, against := range references {
		parts[i] = against + " for " + strings.Join(measured[against], ", ")
	}
	return strings.Join(parts, "; ")
}

// ReferenceName says what the rows' overheads are measured against: "the baseline", or
// the destination a report named instead.
func ReferenceName(rows []v1alpha1.Result) string {
	against := OverheadAgainst(rows)
	for _, row := range rows {
		if row.Destination == against && row.Type != v1alpha1.DestinationNone {
			return against
		}
	}
	return "the baseline"
}

// DropNote says why a row's records were dropped, for the notes under a table or chart.
func DropNote(row v1alpha1.Result) string {
	return fmt.Sprintf("%s dropped records: %s", results.RowName(row), row.Records.DropReason)
}

// RecordNotes say what a row's records hold beside drops: the records logbench could not
// see and why, the duplicates, and how they compare with CloudNativePG's sampler.
func RecordNotes(row v1alpha1.Result) []string {
	r := row.Records
	var notes []string
	if r.UnverifiedReason != "" {
		notes = append(notes, fmt.Sprintf("%s: %d records unverified (not dropped): %s", results.RowName(row), r.Unverified,
			r.UnverifiedReason))
	}
	if r.Duplicates > 0 {
		notes = append(notes, fmt.Sprintf("%s: %s records stored twice or more by retried pushes, "+
			"counted apart from drops", results.RowName(row), duplicateCount(r.Duplicates, r.Stages)))
	}
	if r.Sampler != nil && r.Sampler.Message != "" && !strings.Contains(r.DropReason, r.Sampler.Message) {
		notes = append(notes, fmt.Sprintf("%s sampler %s: %s", results.RowName(row), r.Sampler.Verdict, r.Sampler.Message))
	}
	return notes
}

// measurementNotes are the figures of a row that the table's columns leave out: the
// syslog receiver's cost (ReceiverNote) and the scripts' shares (ScriptsNote).
func measurementNotes(row v1alpha1.Result) []string {
	var notes []string
	for _, note := range []string{ReceiverNote(row), ScriptsNote(row)} {
		if note != "" {
			notes = append(notes, note)
		}
	}
	return notes
}

// ReceiverNote says what a forwarding Syslog destination's receiver spent, which the
// shipper's columns leave out; "" for other rows.
func ReceiverNote(row v1alpha1.Result) string {
	if row.ReceiverCPUCores == nil && row.ReceiverPeakMemoryBytes == nil {
		return ""
	}
	return fmt.Sprintf("%s: the syslog receiver's pod spent %s cores (%s ms per 1,000 records the server wrote), "+
		"%s MiB at most", results.RowName(row), cmp.Or(CoresCell(row.ReceiverCPUCores), missing),
		cmp.Or(CPUPer1kCell(row.ReceiverCPUMsPer1kRecords), missing),
		cmp.Or(MemoryCell(row.ReceiverPeakMemoryBytes), missing))
}

// ScriptsNote gives each script's TPS and latency in a row of runs of several scripts,
// medians over its repeats, and how many of the runs' transactions pgbench left out of
// the scripts' figures; "" for other rows.
func ScriptsNote(row v1alpha1.Result) string {
	scripts, runTransactions := results.Scripts(row)
	if len(scripts) == 0 {
		return ""
	}
	parts := make([]string, 0, len(scripts))
	var transactions int64
	for _, script := range scripts {
		parts = append(parts, fmt.Sprintf("%s %.1f TPS, %.3f ms", script.Key, script.TPS, script.LatencyAvgMs))
		transactions += script.Transactions
	}
	note := fmt.Sprintf("%s scripts: %s", results.RowName(row), strings.Join(parts, "; "))
	if transactions != runTransactions {
		note += fmt.Sprintf(" (their transactions are %d of the runs' %d: with several threads pgbench adds "+
			"them up without a lock)", transactions, runTransactions)
	}
	return note
}

// samplerVerdict is a row's verdict against CloudNativePG's sampler, "" without one.
func samplerVerdict(r v1alpha1.Records) string {
	if r.Sampler == nil {
		return ""
	}
	return string(r.Sampler.Verdict)
}

// LateNote says how many of a row's records arrived after the drain ended.
func LateNote(row v1alpha1.Result) string {
	return fmt.Sprintf(
		"%s: %d records arrived after the drain ended (late, not dropped, not delivered)",
		results.RowName(row),
		row.Records.ArrivedLate,
	)
}

// stageWords spells the stage names that are identifiers as words.
var stageWords = strings.NewReplacer("containerLog", "container log")

// StagesNote counts a row's records at each stage of its pipeline that was counted and
// names the stage where records went missing.
func StagesNote(row v1alpha1.Result) string {
	stages := row.Records.Stages
	var counted []string
	for _, stage := range stages.Pipeline() {
		if stage.Count != nil {
			counted = append(counted, fmt.Sprintf("%s %d", stageWords.Replace(stage.Name), *stage.Count))
		}
	}
	note := fmt.Sprintf("%s records by stage: %s", results.RowName(row), strings.Join(counted, ", "))
	if stages.LostAt != "" {
		note += "; lost at " + stages.LostAt
	} else {
		note += "; no stage lost records"
	}
	if stages.Duplicates > 0 {
		note += fmt.Sprintf("; stored holds %s duplicates", duplicateCount(stages.Duplicates, stages))
	}
	if stages.Unverified > 0 {
		note += fmt.Sprintf("; %s may hold %d more records than logbench could count",
			stageWords.Replace(stages.UnverifiedAt), stages.Unverified)
	}
	if stages.InputPausedSeconds > 0 {
		note += fmt.Sprintf("; the shipper's input paused on its buffer limit for about %.1f s", stages.InputPausedSeconds)
	}
	return note
}

// attempts says on which attempt a repeat was recorded (" on attempt 2") and what the
// attempts before it met, each after "; "; both "" for a repeat recorded on its first.
func attempts(r v1alpha1.RepeatResult) (on, earlier string) {
	if len(r.FailedAttempts) == 0 {
		return "", ""
	}
	var met strings.Builder
	for i, err := range r.FailedAttempts {
		fmt.Fprintf(&met, "; attempt %d failed: %s", i+1, firstLine(err))
	}
	return fmt.Sprintf(" on attempt %d", len(r.FailedAttempts)+1), met.String()
}

// firstLine keeps footnotes one line each; the full error is in the JSON output.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func renderTable(w io.Writer, rows []v1alpha1.Result) error {
	header, cells := humanTable(rows)
	return writeTable(w, header, cells, footnotes(rows))
}

func renderMarkdown(w io.Writer, rows []v1alpha1.Result) error {
	header, cells := humanTable(rows)
	return writeMarkdown(w, header, cells, footnotes(rows))
}

// humanTable is the header and cells of the table and Markdown, with a LOGGING column
// after TYPE when the logging destinations do not all log alike: a settings matrix.
func humanTable(rows []v1alpha1.Result) ([]string, [][]string) {
	withLogging := LoggingVaries(rows)
	header := humanHeader
	if withLogging {
		header = slices.Insert(slices.Clone(humanHeader), loggingColumn, "LOGGING")
	}
	cells := make([][]string, len(rows))
	for i, row := range rows {
		cells[i] = humanCells(row)
		if withLogging {
			cells[i] = slices.Insert(cells[i], loggingColumn, cmp.Or(row.Logging, missing))
		}
	}
	return header, cells
}

// loggingColumn is where the LOGGING column goes: after DESTINATION and TYPE.
const loggingColumn = 2

// LoggingVaries reports whether the rows of destinations that log (all but the
// baseline) carry more than one logging setting.
func LoggingVaries(rows []v1alpha1.Result) bool {
	var first string
	for _, row := range rows {
		if row.Type == v1alpha1.DestinationNone {
			continue
		}
		if first == "" {
			first = row.Logging
		} else if row.Logging != first {
			return true
		}
	}
	return false
}

// writeTable aligns the header and rows in columns for a terminal, then the notes.
func writeTable(w io.Writer, header []string, rows [][]string, notes []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, cells := range rows {
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeNotes(w, notes, "")
}

// writeMarkdown writes the header and rows as a Markdown table, then the notes as a list.
func writeMarkdown(w io.Writer, header []string, rows [][]string, notes []string) error {
	var b strings.Builder
	writeMarkdownRow(&b, header)
	separator := make([]string, len(header))
	for i := range separator {
		separator[i] = "---"
	}
	writeMarkdownRow(&b, separator)
	for _, cells := range rows {
		writeMarkdownRow(&b, cells)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	return writeNotes(w, notes, "- ")
}

func writeMarkdownRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
	}
	b.WriteString("\n")
}

// writeNotes separates the notes from the table by a blank line and prefixes each.
func writeNotes(w io.Writer, notes []string, prefix string) error {
	if len(notes) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, n := range notes {
		b.WriteString(prefix + n + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func renderJSON(w io.Writer, rows []v1alpha1.Result) error {
	if rows == nil {
		rows = []v1alpha1.Result{} // "[]", not "null", for consumers that expect a list
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

var csvHeader = []string{
	"destination", "type", "logging", "clients", "repeats", "failed_repeats",
	"tps", "tps_stddev", "tps_cv_percent", "latency_avg_ms", "latency_stddev_ms",
	"overhead_percent", "overhead_low_percent", "overhead_high_percent", "overhead_confidence_percent",
	"overhead_verdict", "overhead_against", "noisy", "expected", "expected_is_estimate", "expected_source", "delivered",
	"arrived_late",
	"dropped", "dropped_at_least", "unverified", "duplicates", "sampler_verdict", "accounting_error", "drain_seconds",
	"log_bytes_per_record", "log_gigabytes_per_hour",
	"knee", "ramp_stop", "server_cpu_cores", "server_cpu_ms_per_1k_transactions", "server_peak_memory_bytes",
	"shipper_cpu_cores", "shipper_cpu_ms_per_1k_records", "shipper_peak_memory_bytes",
	"receiver_cpu_cores", "receiver_cpu_ms_per_1k_records", "receiver_peak_memory_bytes",
}

// renderCSV writes full-precision numbers for further processing; absent values
// (overhead, dropped) are empty fields.
func renderCSV(w io.Writer, rows []v1alpha1.Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, row := range rows {
		ok := len(results.Successful(row.Repeats))
		record := []string{
			row.Destination, string(row.Type), row.Logging, strconv.Itoa(int(row.Clients)),
			strconv.Itoa(len(row.Repeats)), strconv.Itoa(len(row.Repeats) - ok),
			formatFloat(row.TPS), formatFloat(row.TPSStdDev), formatFloat(row.TPSCoefficientOfVariation),
			formatFloat(row.LatencyAvgMs), formatFloat(row.LatencyStdDevMs),
			optional(row.OverheadPercent, formatFloat),
			optional(intervalField(row, func(i v1alpha1.OverheadInterval) float64 { return i.LowPercent }), formatFloat),
			optional(intervalField(row, func(i v1alpha1.OverheadInterval) float64 { return i.HighPercent }), formatFloat),
			optional(intervalField(row, func(i v1alpha1.OverheadInterval) float64 { return i.ConfidencePercent }), formatFloat),
			string(row.OverheadVerdict), row.OverheadAgainst, strconv.FormatBool(row.Noisy),
			strconv.FormatInt(row.Records.Expected, 10), strconv.FormatBool(row.Records.ExpectedIsEstimate),
			string(row.Records.ExpectedSource), strconv.FormatInt(row.Records.Delivered, 10),
			strconv.FormatInt(row.Records.ArrivedLate, 10),
			optional(row.Records.Dropped, formatInt), optional(row.Records.DroppedAtLeast, formatInt),
			formatInt(row.Records.Unverified), formatInt(row.Records.Duplicates), samplerVerdict(row.Records),
			row.Records.AccountingError, formatFloat(row.DrainSeconds),
			optional(row.LogBytesPerRecord, formatFloat), optional(row.LogGigabytesPerHour, formatFloat),
			strconv.FormatBool(row.Knee), row.RampStop,
			optional(row.ServerCPUCores, formatFloat), optional(row.ServerCPUMsPer1kTransactions, formatFloat),
			optional(row.ServerPeakMemoryBytes, formatInt),
			optional(row.ShipperCPUCores, formatFloat), optional(row.ShipperCPUMsPer1kRecords, formatFloat),
			optional(row.ShipperPeakMemoryBytes, formatInt),
			optional(row.ReceiverCPUCores, formatFloat), optional(row.ReceiverCPUMsPer1kRecords, formatFloat),
			optional(row.ReceiverPeakMemoryBytes, formatInt),
		}
		if err := cw.Write(record); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// intervalField reads one figure of a row's overhead interval, nil without one.
func intervalField(row v1alpha1.Result, field func(v1alpha1.OverheadInterval) float64) *float64 {
	if row.OverheadInterval == nil {
		return nil
	}
	value := field(*row.OverheadInterval)
	return &value
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func formatInt(v int64) string { return strconv.FormatInt(v, 10) }

func optional[T any](v *T, format func(T) string) string {
	if v == nil {
		return ""
	}
	return format(*v)
}

func duplicatesCountedByIdentity(stages *v1alpha1.RecordStages) bool {
	return stages != nil && stages.DuplicatesExact
}

// duplicateCount says how many duplicates a row holds: a lower bound unless its stages
// counted them by the records' identity.
func duplicateCount(duplicates int64, stages *v1alpha1.RecordStages) string {
	if duplicatesCountedByIdentity(stages) {
		return fmt.Sprintf("%d (counted by identity)", duplicates)
	}
	return fmt.Sprintf("at least %d", duplicates)
}

// OverheadCell shows a row's overhead for tables: the median, its interval and its
// verdict as benchstat shows it, ~ for an overhead within noise; "-" without overhead.
func OverheadCell(row v1alpha1.Result) string {
	if row.OverheadPercent == nil {
		return missing
	}
	cell := fmt.Sprintf("%.1f%%", *row.OverheadPercent)
	if interval := row.OverheadInterval; interval != nil {
		cell += fmt.Sprintf(" [%.1f, %.1f]", interval.LowPercent, interval.HighPercent)
	}
	if row.OverheadVerdict == v1alpha1.OverheadWithinNoise {
		cell = noiseMarker + " " + cell
	}
	return cell
}

// noiseMarker marks an overhead within noise, as benchstat marks a difference that is
// not significant.
const noiseMarker = "~"

// KneeNotes say where each destination's ramp ended, from the rows MarkKnees marked.
func KneeNotes(rows []v1alpha1.Result) []string {
	var notes []string
	knees := map[string]int32{}
	stopped := map[string]bool{}
	for _, row := range rows {
		if row.Knee {
			knees[row.Destination] = row.Clients
		}
		stopped[row.Destination] = stopped[row.Destination] || row.RampStop != ""
	}
	for _, row := range rows {
		knee, found := knees[row.Destination]
		switch {
		case row.RampStop != "" && found:
			notes = append(notes, fmt.Sprintf("%s %s: knee at %d clients; the ramp stopped at %d: %s",
				kneeMarker, row.Destination, knee, row.Clients, row.RampStop))
		case row.RampStop != "":
			notes = append(notes, fmt.Sprintf("%s %s: no knee, its first client count stopped the ramp: %s",
				kneeMarker, row.Destination, row.RampStop))
		case row.Knee && !stopped[row.Destination]:
			notes = append(notes, fmt.Sprintf("%s %s: knee at %d clients; the ramp %s",
				kneeMarker, row.Destination, row.Clients, schedule.ReachedMax))
		}
	}
	return notes
}
