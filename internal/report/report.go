// Package report renders a finished (or running) LoggingBenchmark for people: a terminal
// table, Markdown, or a self-contained HTML page with SVG charts; and its result rows,
// alone or compared with another benchmark's, as a table, Markdown, JSON or CSV. It is
// pure: the benchmark comes in as a value, whether read from the cluster or from a file.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/text"
)

// Format is an output format of Render, RenderRows or RenderComparison; each takes the
// formats its Parse function reads.
type Format string

const (
	FormatTable    Format = "table"
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
	FormatJSON     Format = "json"
	FormatCSV      Format = "csv"
)

// Formats lists the formats Render accepts, for flag help.
var Formats = []Format{FormatTable, FormatMarkdown, FormatHTML}

func (f Format) String() string { return string(f) }

// ParseFormat reads a format name, case-insensitively.
func ParseFormat(name string) (Format, error) {
	return text.ParseChoice("report format", name, Formats)
}

// Render writes the report of the benchmark in the given format.
func Render(w io.Writer, f Format, benchmark *v1alpha1.LoggingBenchmark) error {
	switch f {
	case FormatTable:
		return renderText(w, benchmark, FormatTable, "%s: %s\n", "")
	case FormatMarkdown:
		heading := fmt.Sprintf("# LoggingBenchmark %s\n\n", benchmark.Name)
		return renderText(w, benchmark, FormatMarkdown, "- **%s:** %s\n", heading)
	case FormatHTML:
		return renderHTML(w, benchmark)
	}
	// ParseFormat gives the names Render takes; anything else is a caller's mistake.
	return fmt.Errorf("unknown report format %q: use one of %s", f, Formats)
}

// renderText writes the heading, one line per fact and the rows of RenderRows, so that
// the terminal, Markdown and `logbench run` tables agree.
func renderText(
	w io.Writer,
	benchmark *v1alpha1.LoggingBenchmark,
	table Format,
	factLine, heading string,
) error {
	var b strings.Builder
	b.WriteString(heading)
	for _, f := range describe(benchmark) {
		fmt.Fprintf(&b, factLine, f.Label, f.Value)
	}
	b.WriteString("\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(benchmark.Status.Results) == 0 {
		_, err := io.WriteString(w, noResults+"\n")
		return err
	}
	return RenderRows(w, table, benchmark.Status.Results)
}

const noResults = "No results yet."

// fact is one labelled line of the report's header.
type fact struct {
	Label, Value string
}

// describe summarises the benchmark: how it went, what it measured and with which
// settings. Every format shows these facts, in this order.
func describe(b *v1alpha1.LoggingBenchmark) []fact {
	spec, status := &b.Spec, &b.Status
	phase := string(status.Phase)
	if phase == "" {
		phase = "unknown"
	}
	if status.Progress.RunsTotal > 0 {
		phase += fmt.Sprintf(" (%d/%d runs)", status.Progress.RunsDone, status.Progress.RunsTotal)
	}
	facts := []fact{{"Phase", phase}}
	if b.Namespace != "" {
		facts = append(facts, fact{"Namespace", b.Namespace})
	}
	if status.StartTime != nil {
		facts = append(facts, fact{"Started", formatTime(status.StartTime.Time)})
	}
	if status.CompletionTime != nil {
		completed := formatTime(status.CompletionTime.Time)
		if status.StartTime != nil {
			completed += fmt.Sprintf(" (after %s)", status.CompletionTime.Sub(status.StartTime.Time).Round(time.Second))
		}
		facts = append(facts, fact{"Completed", completed})
	}
	w := spec.Workload
	facts = append(
		facts,
		fact{"Workload", fmt.Sprintf("%s, %s queries, scale %d%s, %s, threads %s",
			w.Builtin, w.QueryMode, w.Scale, unloggedNote(w.UnloggedTables), clientsFact(w), threads(w.Threads))},
		fact{
			"Runs",
			fmt.Sprintf(
				"%s each, %d %s, %s of the repeats",
				w.Duration.Duration,
				w.Repeats,
				plural(int(w.Repeats), "repeat"),
				strings.ToLower(string(w.Aggregate)),
			),
		},
		fact{"Logging", loggingSettings(spec.Logging)},
		fact{"Destinations", destinations(spec)},
	)
	if against := OverheadAgainstText(status.Results); against != "" {
		facts = append(facts, fact{"Overhead against", against})
	}
	if s := status.Summary; s.WorstOverhead != "" || len(status.Results) > 0 {
		worst := s.WorstOverhead
		if worst == "" {
			worst = "none measured"
		}
		dropped := s.Dropped
		if dropped == "" {
			// A status written before the summary said it in words.
			dropped = fmt.Sprint(s.DroppedRecords)
		}
		facts = append(facts, fact{"Worst overhead", worst}, fact{"Dropped records", dropped})
		if s.UnverifiedRecords > 0 {
			facts = append(facts, fact{"Unverified records (not dropped)", fmt.Sprint(s.UnverifiedRecords)})
		}
		if s.DuplicateRecords > 0 {
			facts = append(facts, fact{"Duplicate records (not netted)", fmt.Sprint(s.DuplicateRecords)})
		}
	}
	for _, d := range status.Destinations {
		if d.Message != "" {
			facts = append(facts, fact{"Destination " + d.Name, fmt.Sprintf("%s: %s", d.State, d.Message)})
		}
	}
	return facts
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func unloggedNote(unlogged bool) string {
	if unlogged {
		return " (unlogged tables)"
	}
	return ""
}

func threads(n int32) string {
	if n == 0 {
		return "auto"
	}
	return fmt.Sprint(n)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func joinInts(values []int32) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}

// Against measures the benchmark's overheads against the named destination instead of
// the baseline, paired by round as the status's are, and sums them up again; the
// benchmark's status then says what it would have said with that reference.
func Against(b *v1alpha1.LoggingBenchmark, reference string) error {
	rows, err := results.Against(b.Status.Results, reference)
	if err != nil {
		return err
	}
	b.Status.Results = rows
	summary := results.Summarize(rows)
	b.Status.Summary.WorstOverhead, b.Status.Summary.Noise = summary.WorstOverhead, summary.Noise
	return nil
}

// loggingSettings names the PostgreSQL parameters, as people tune them by those names.
func loggingSettings(l v1alpha1.LoggingSpec) string {
	settings := fmt.Sprintf(
		"log_statement=%s, log_min_duration_statement=%d, log_duration=%s, track_io_timing=%s, log_line_prefix=%q",
		l.Statement,
		l.MinDurationStatementMs(),
		onOff(l.Duration),
		onOff(l.TrackIOTiming),
		l.LinePrefix,
	)
	if audit := l.Pgaudit; audit != nil {
		settings += fmt.Sprintf(", pgaudit.log=%q, pgaudit.log_parameter=%s, pgaudit.log_relation=%s (not on the baseline)",
			audit.LogSetting(), onOff(audit.LogParameter), onOff(audit.LogRelation))
	}
	counted := l.SourceCountedParameters()
	names := slices.Sorted(maps.Keys(counted))
	for i, name := range names {
		names[i] = name + "=" + counted[name]
	}
	if len(names) > 0 {
		settings += ", " + strings.Join(names, ", ")
	}
	return settings
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func destinations(spec *v1alpha1.LoggingBenchmarkSpec) string {
	effective := spec.EffectiveDestinations()
	parts := make([]string, 0, len(effective))
	for _, d := range effective {
		kind := string(d.Type)
		if d.Type.ChoosesFormat() {
			kind += ", " + string(d.EffectiveFormat())
		}
		if d.Logging != nil {
			kind += ", " + spec.LoggingSettings(d)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", d.Name, kind))
	}
	return strings.Join(parts, ", ")
}

// ReadFile loads a LoggingBenchmark with its status from a YAML or JSON file, such as
// the output of `logbench run --local --save` or `kubectl get lbench NAME -o yaml`, or
// from a list that holds it with its runs' records (`kubectl get lbench,lbrun -o yaml`);
// name (NAME or NAMESPACE/NAME) selects the benchmark in a list of several, "" takes the
// only one (Decode).
func ReadFile(path, name string) (*v1alpha1.LoggingBenchmark, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	benchmark, err := Decode(data, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return benchmark, nil
}

// Decode parses a LoggingBenchmark, or a list of LoggingBenchmarks and
// LoggingBenchmarkRuns (other kinds in it are ignored), from which it takes the
// benchmark named name (NAME or NAMESPACE/NAME, as kubectl get -A saves benchmarks of
// one name in several namespaces), or the only one when name is "", with the repeats of its rows
// filled from the records of its runs (results.WithRepeats). Unlike manifest.Decode it
// keeps the status and does not validate the spec: the report shows what the cluster
// holds, and fields a newer operator added are ignored rather than refused.
func Decode(data []byte, name string) (*v1alpha1.LoggingBenchmark, error) {
	wanted, err := selectBenchmark(name)
	if err != nil {
		return nil, err
	}
	var document struct {
		metav1.TypeMeta `json:",inline"`
		Items           []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(data, &document); err != nil {
		return nil, fmt.Errorf("not a LoggingBenchmark in YAML or JSON: %w", err)
	}
	if !strings.HasSuffix(document.Kind, "List") {
		benchmark, err := decodeBenchmark(data)
		if err == nil && !wanted(benchmark) {
			return nil, fmt.Errorf("the file holds LoggingBenchmark %s, not %s", QualifiedName(benchmark), name)
		}
		return benchmark, err
	}
	var (
		benchmarks []*v1alpha1.LoggingBenchmark
		records    []v1alpha1.LoggingBenchmarkRun
	)
	for i, item := range document.Items {
		var object metav1.TypeMeta
		if err := json.Unmarshal(item, &object); err != nil {
			return nil, fmt.Errorf("item %d of the list: %w", i+1, err)
		}
		if object.APIVersion != v1alpha1.GroupVersion.String() {
			continue
		}
		switch object.Kind {
		case "LoggingBenchmark":
			benchmark, err := decodeBenchmark(item)
			if err != nil {
				return nil, fmt.Errorf("item %d of the list: %w", i+1, err)
			}
			if wanted(benchmark) {
				benchmarks = append(benchmarks, benchmark)
			}
		case "LoggingBenchmarkRun":
			var record v1alpha1.LoggingBenchmarkRun
			if err := json.Unmarshal(item, &record); err != nil {
				return nil, fmt.Errorf("item %d of the list, a LoggingBenchmarkRun: %w", i+1, err)
			}
			records = append(records, record)
		}
	}
	switch {
	case len(benchmarks) == 0 && name != "":
		return nil, fmt.Errorf("the list holds no LoggingBenchmark %s", name)
	case len(benchmarks) == 0:
		return nil, errors.New("the list holds no LoggingBenchmark")
	case len(benchmarks) > 1:
		var names []string
		for _, benchmark := range benchmarks {
			names = append(names, QualifiedName(benchmark))
		}
		return nil, fmt.Errorf("the list holds %d LoggingBenchmarks (%s): give the NAME of one, "+
			"or NAMESPACE/NAME", len(benchmarks), strings.Join(names, ", "))
	}
	benchmark := benchmarks[0]
	benchmark.Status.Results = results.WithRepeats(benchmark, records)
	return benchmark, nil
}

// SplitName splits a LoggingBenchmark's name as the commands take it, NAME or
// NAMESPACE/NAME, into its namespace ("" for NAME) and its name.
func SplitName(reference string) (namespace, name string, err error) {
	parts := strings.Split(reference, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return "", parts[0], nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return parts[0], parts[1], nil
	}
	return "", "", fmt.Errorf("%q names no LoggingBenchmark: give NAME or NAMESPACE/NAME", reference)
}

// selectBenchmark tells which benchmarks of a file reference (SplitName) selects:
// every one when it is "".
func selectBenchmark(reference string) (func(*v1alpha1.LoggingBenchmark) bool, error) {
	if reference == "" {
		return func(*v1alpha1.LoggingBenchmark) bool { return true }, nil
	}
	namespace, name, err := SplitName(reference)
	if err != nil {
		return nil, err
	}
	return func(benchmark *v1alpha1.LoggingBenchmark) bool {
		return benchmark.Name == name && (namespace == "" || benchmark.Namespace == namespace)
	}, nil
}

// QualifiedName is NAMESPACE/NAME, or NAME for a benchmark saved without a namespace
// (logbench run --local --save).
func QualifiedName(benchmark *v1alpha1.LoggingBenchmark) string {
	if benchmark.Namespace == "" {
		return benchmark.Name
	}
	return benchmark.Namespace + "/" + benchmark.Name
}

// decodeBenchmark parses one LoggingBenchmark.
func decodeBenchmark(data []byte) (*v1alpha1.LoggingBenchmark, error) {
	var benchmark v1alpha1.LoggingBenchmark
	if err := yaml.Unmarshal(data, &benchmark); err != nil {
		return nil, fmt.Errorf("not a LoggingBenchmark in YAML or JSON: %w", err)
	}
	gvk := v1alpha1.GroupVersion.WithKind("LoggingBenchmark")
	if benchmark.APIVersion != gvk.GroupVersion().String() || benchmark.Kind != gvk.Kind {
		return nil, fmt.Errorf("expected apiVersion %s and kind %s, got %q and %q",
			gvk.GroupVersion(), gvk.Kind, benchmark.APIVersion, benchmark.Kind)
	}
	if benchmark.Name == "" {
		return nil, errors.New("the LoggingBenchmark has no metadata.name")
	}
	return &benchmark, nil
}

// clientsFact says which client counts the workload runs: its list, or its ramp and the
// conditions that stop it.
func clientsFact(w v1alpha1.WorkloadSpec) string {
	ramp := w.Ramp
	if ramp == nil {
		return "clients " + joinInts(w.Clients)
	}
	growth := fmt.Sprintf("×%d", ramp.Factor)
	if ramp.Factor == 0 {
		growth = fmt.Sprintf("+%d", ramp.Step)
	}
	var stops []string
	if bound := ramp.StopWhen.OverheadAbovePercent; bound != nil {
		stops = append(stops, fmt.Sprintf("overhead above %d%%", *bound))
	}
	if ramp.StopWhen.DroppedRecords {
		stops = append(stops, "a dropped record")
	}
	if bound := ramp.StopWhen.TPSGainBelowPercent; bound != nil {
		stops = append(stops, fmt.Sprintf("TPS gain below %d%%", *bound))
	}
	stop := "no stop condition"
	if len(stops) > 0 {
		stop = "stopping at " + strings.Join(stops, ", ")
	}
	return fmt.Sprintf("clients ramped from %d, %s, up to %d (%s)", ramp.Start, growth, ramp.Max, stop)
}
