package v1alpha1

import (
	"cmp"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"
)

// BaselineName is the name of the destination added when spec.baseline.enabled is true
// and no destination of type None is listed.
const BaselineName = "baseline"

// EffectiveDestinations returns the destinations to measure: the automatic baseline
// first (when it applies), then the listed ones in order.
func (s *LoggingBenchmarkSpec) EffectiveDestinations() []Destination {
	if _, listed := s.BaselineDestination(); listed || !s.Baseline.Enabled {
		return append([]Destination(nil), s.Destinations...)
	}
	return append([]Destination{{Name: BaselineName, Type: DestinationNone}}, s.Destinations...)
}

// BaselineDestination returns the name of the listed destination of type None placed as
// the workload: the baseline. One of type None placed otherwise is the reference of the
// destinations placed as it is only.
func (s *LoggingBenchmarkSpec) BaselineDestination() (string, bool) {
	for _, d := range s.Destinations {
		if d.Type == DestinationNone && s.PlacementOf(d) == s.Workload.Placement {
			return d.Name, true
		}
	}
	return "", false
}

// PlacementOf is where the pgbench pods of the destination's runs go against its
// cluster's primary: its own placement, or the workload's.
func (s *LoggingBenchmarkSpec) PlacementOf(d Destination) Placement {
	return cmp.Or(d.Placement, s.Workload.Placement)
}

// DefaultPodStartTimeout is spec.podStartTimeout when unset.
const DefaultPodStartTimeout = 2 * time.Minute

// PodStartTimeoutOrDefault is spec.podStartTimeout, DefaultPodStartTimeout when unset.
func (s *LoggingBenchmarkSpec) PodStartTimeoutOrDefault() time.Duration {
	if s.PodStartTimeout == nil {
		return DefaultPodStartTimeout
	}
	return s.PodStartTimeout.Duration
}

// RunsTotal is the number of pgbench executions the benchmark needs; with a ramp, the
// most it may need.
func (s *LoggingBenchmarkSpec) RunsTotal() int32 {
	return int32(len(s.EffectiveDestinations())*len(s.Workload.ClientCounts())) * s.Workload.Repeats
}

// ClientCounts are the client counts the workload may run at, ascending for a ramp:
// clients, or every count of the ramp up to its maximum.
func (w *WorkloadSpec) ClientCounts() []int32 {
	ramp := w.Ramp
	if ramp == nil {
		return w.Clients
	}
	var counts []int32
	for clients := ramp.Start; clients < ramp.Max; {
		counts = append(counts, clients)
		if ramp.Factor > 1 {
			clients *= ramp.Factor
		} else {
			clients += max(ramp.Step, 1)
		}
	}
	return append(counts, ramp.Max)
}

// typeRecords is what the API says about the records of each destination type: the
// format PostgreSQL writes them in and whether a sidecar ships them. What the rest of
// logbench does with a type is in internal/destination's table.
var typeRecords = map[DestinationType]recordsOfType{
	// The baseline keeps CloudNativePG's default pipeline, csvlog.
	DestinationNone:             {format: FormatCSVLog},
	DestinationStdout:           {format: FormatCSVLog, formatField: true},
	DestinationStderr:           {format: FormatStderr},
	DestinationCSVLog:           {format: FormatCSVLog},
	DestinationJSONLog:          {format: FormatJSONLog},
	DestinationFluentBitSidecar: {ships: true},
	DestinationLoki:             {ships: true},
	// The receiver on /dev/log is a Fluent Bit sidecar in a cluster.
	DestinationSyslog: {format: FormatSyslog, ships: true},
}

type recordsOfType struct {
	// format is the format PostgreSQL writes; with formatField, the default of the field.
	format LogFormat
	// formatField says the destination's format field chooses the format.
	formatField bool
	// ships says a sidecar ships the records out of the instance pod; the shipper's
	// format chooses the format unless format says it.
	ships bool
}

// EffectiveFormat is the record format the destination carries.
func (d Destination) EffectiveFormat() LogFormat {
	records := typeRecords[d.Type]
	switch {
	case records.ships && records.format == "":
		return d.EffectiveShipper().Format
	case records.formatField && d.Format != "":
		return d.Format
	}
	return records.format
}

// ChoosesFormat reports whether destinations of the type choose their records' format in
// their format field (Stdout); the other types' names or shippers say it.
func (t DestinationType) ChoosesFormat() bool {
	return typeRecords[t].formatField
}

// ServerParameters returns the PostgreSQL settings every server of the destination runs
// with: spec.postgres.parameters plus the statement logging of spec.logging with the
// destination's own over it, or statement logging off for the baseline. Where records go
// (log_destination and friends) is not included: it differs between a CloudNativePG pod
// and a local server.
func (s *LoggingBenchmarkSpec) ServerParameters(d Destination) map[string]string {
	parameters := make(map[string]string, len(s.Postgres.Parameters)+10)
	for name, value := range s.Postgres.Parameters {
		parameters[name] = string(value)
	}
	logging := s.Logging.For(d)
	parameters["log_statement"] = string(logging.Statement)
	parameters["log_min_duration_statement"] = strconv.Itoa(int(logging.MinDurationStatementMs()))
	parameters["log_duration"] = onOff(logging.Duration)
	parameters["log_connections"] = onOff(logging.Connections)
	parameters["log_disconnections"] = onOff(logging.Disconnections)
	parameters["track_io_timing"] = onOff(logging.TrackIOTiming)
	if logging.LinePrefix != "" {
		parameters["log_line_prefix"] = string(logging.LinePrefix)
	}
	if audit := logging.Pgaudit; audit != nil {
		parameters["pgaudit.log"] = audit.LogSetting()
		parameters["pgaudit.log_parameter"] = onOff(audit.LogParameter)
		parameters["pgaudit.log_relation"] = onOff(audit.LogRelation)
	}
	maps.Copy(parameters, logging.SourceCountedParameters())
	return parameters
}

// For returns the logging the destination's servers run with: the destination's own
// fields over these, or, for the baseline, statement logging off with only the line
// prefix and track_io_timing kept. Applying it twice changes nothing, so code given
// either spec.logging or a destination's effective logging may call it.
func (l LoggingSpec) For(d Destination) LoggingSpec {
	if d.Type == DestinationNone {
		return LoggingSpec{Statement: StatementNone, LinePrefix: l.LinePrefix, TrackIOTiming: l.TrackIOTiming}
	}
	o := d.Logging
	if o == nil {
		return l
	}
	override(&l.Statement, o.Statement)
	if o.MinDurationStatement != nil {
		l.MinDurationStatement = o.MinDurationStatement
	}
	override(&l.Duration, o.Duration)
	override(&l.Connections, o.Connections)
	override(&l.Disconnections, o.Disconnections)
	override(&l.TrackIOTiming, o.TrackIOTiming)
	if o.Pgaudit != nil {
		l.Pgaudit = o.Pgaudit
	}
	override(&l.LinePrefix, o.LinePrefix)
	l.overrideSourceCounted(o)
	return l
}

func override[T any](field *T, value *T) {
	if value != nil {
		*field = *value
	}
}

// LoggingSettings names the destination's effective logging in short, as status rows,
// reports and metrics show it: "statement=all,duration=on"; settings left off are left
// out, and the line prefix is named only where the destination sets its own.
func (s *LoggingBenchmarkSpec) LoggingSettings(d Destination) string {
	l := s.Logging.For(d)
	settings := []string{"statement=" + string(cmp.Or(l.Statement, StatementNone))}
	if ms := l.MinDurationStatementMs(); ms >= 0 {
		settings = append(settings, "minDurationStatement="+strconv.Itoa(int(ms)))
	}
	for _, flag := range []struct {
		name string
		on   bool
	}{
		{"duration", l.Duration}, {"connections", l.Connections}, {"disconnections", l.Disconnections},
		{"trackIOTiming", l.TrackIOTiming},
	} {
		if flag.on {
			settings = append(settings, flag.name+"=on")
		}
	}
	if audit := l.Pgaudit; audit != nil {
		pgaudit := "pgaudit=" + strings.ReplaceAll(audit.LogSetting(), ", ", "+")
		if audit.LogParameter {
			pgaudit += "/parameter"
		}
		if audit.LogRelation {
			pgaudit += "/relation"
		}
		settings = append(settings, pgaudit)
	}
	settings = append(settings, l.sourceCountedSettings()...)
	if d.Logging != nil && d.Logging.LinePrefix != nil && d.Type != DestinationNone {
		settings = append(settings, "linePrefix="+strconv.Quote(string(l.LinePrefix)))
	}
	return strings.Join(settings, ",")
}

// LogSetting is pgaudit.log: the audited classes, comma-separated.
func (p *PgauditSpec) LogSetting() string {
	classes := make([]string, len(p.Log))
	for i, class := range p.Log {
		classes[i] = string(class)
	}
	return strings.Join(classes, ", ")
}

// UsesPgaudit reports whether the server parameters load pgaudit: any pgaudit.* one,
// as CloudNativePG decides.
func UsesPgaudit(parameters map[string]string) bool {
	for name := range parameters {
		if strings.HasPrefix(name, "pgaudit.") {
			return true
		}
	}
	return false
}

// PgauditField names the field that sets dest's pgaudit, for messages about it: the
// destination's own logging, or spec.logging.
func (s *LoggingBenchmarkSpec) PgauditField(dest Destination) string {
	if dest.Logging != nil && dest.Logging.Pgaudit != nil {
		return fmt.Sprintf("destination %s's logging.pgaudit", dest.Name)
	}
	return "spec.logging.pgaudit"
}

// MinDurationStatementMs is log_min_duration_statement as the server runs with it: -1,
// off, when the spec leaves it out.
func (l LoggingSpec) MinDurationStatementMs() int32 {
	if l.MinDurationStatement == nil {
		return -1
	}
	return *l.MinDurationStatement
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Ships reports whether a sidecar ships the destination's records out of the instance
// pod (FluentBitSidecar and Loki).
func (d Destination) Ships() bool {
	return typeRecords[d.Type].ships
}

// ShipsToLoki reports whether the destination's records go to its Loki, where they are
// counted: Loki destinations and FluentBitSidecar destinations with output Loki.
func (d Destination) ShipsToLoki() bool {
	return d.Ships() && d.EffectiveShipper().Output == OutputLoki
}

// CountedInNodeAgentsLoki reports whether a Stdout destination's records are counted in
// the Loki the platform's node agent ships the container log to.
func (d Destination) CountedInNodeAgentsLoki() bool {
	return d.Type == DestinationStdout && d.Loki != nil
}

// CountsContainerLog reports whether the destination's records are counted in the
// container log: Stdout destinations unless they skip it for their node agent's Loki.
func (d Destination) CountsContainerLog() bool {
	return d.Type == DestinationStdout && (d.Loki == nil || d.ContainerLog != ContainerLogSkip)
}

// EffectiveShipper returns the shipper of a shipping destination with the defaults the
// API leaves implicit: kind FluentBit, format CSVLog, output Null for a FluentBitSidecar
// destination and Loki for a Loki destination. The image stays as given: its default
// depends on the kind.
func (d Destination) EffectiveShipper() ShipperSpec {
	var shipper ShipperSpec
	if d.Shipper != nil {
		shipper = *d.Shipper
	}
	if shipper.Kind == "" {
		shipper.Kind = ShipperFluentBit
	}
	if shipper.Format == "" {
		shipper.Format = FormatCSVLog
	}
	switch {
	case d.Type == DestinationLoki:
		shipper.Output = OutputLoki
	case shipper.Output == "":
		shipper.Output = OutputNull
	}
	if shipper.StorageType == "" && shipper.Kind == ShipperFluentBit {
		shipper.StorageType = StorageMemory
	}
	return shipper
}

// LogDestination is PostgreSQL's log_destination value that writes the format.
func (f LogFormat) LogDestination() string {
	switch f {
	case FormatStderr:
		return "stderr"
	case FormatJSONLog:
		return "jsonlog"
	case FormatSyslog:
		return "syslog"
	}
	return "csvlog"
}

// EffectiveSyslog returns the syslog configuration of a Syslog destination with the
// defaults the API leaves implicit.
func (d Destination) EffectiveSyslog() SyslogSpec {
	var s SyslogSpec
	if d.Syslog != nil {
		s = *d.Syslog
	}
	s.Facility = cmp.Or(s.Facility, "LOCAL0")
	s.Ident = cmp.Or(s.Ident, "postgres")
	s.Transport = cmp.Or(s.Transport, SyslogLocal)
	s.Receiver = cmp.Or(s.Receiver, SyslogFluentBit)
	if s.SequenceNumbers == nil {
		s.SequenceNumbers = new(true)
	}
	if s.SplitMessages == nil {
		s.SplitMessages = new(true)
	}
	return s
}

// Settings are PostgreSQL's syslog_* settings.
func (s SyslogSpec) Settings() map[string]string {
	return map[string]string{
		"syslog_facility":         strings.ToLower(string(s.Facility)),
		"syslog_ident":            s.Ident,
		"syslog_sequence_numbers": onOff(s.SequenceNumbers == nil || *s.SequenceNumbers),
		"syslog_split_messages":   onOff(s.SplitMessages == nil || *s.SplitMessages),
	}
}

// StageCount is one stage of a row's pipeline and its records; Count is nil where the
// stage was not counted.
// +kubebuilder:object:generate=false
type StageCount struct {
	Name  string
	Count *int64
}

// Pipeline lists the stages in the order the records pass them, under the names LostAt
// gives them.
func (s RecordStages) Pipeline() []StageCount {
	return []StageCount{
		{"containerLog", s.ContainerLog}, {"written", s.Written}, {"read", s.Read},
		{"forwarded", s.Forwarded}, {"received", s.Received}, {"sent", s.Sent}, {"stored", s.Stored},
	}
}

// LosingStage names the first stage holding fewer records than the one before it, or ""
// when the last stage holds every record of the first. exactExpected, when the
// expectation is exact, stands before the first stage: a first stage holding fewer lost
// them (the kubelet's container log can). Stages that were not counted are skipped, and
// so is an unverified stage: its count is short of what it held by what logbench could
// not see, which the stage did not lose. The stored stage counts each record once: its
// duplicates never make up for a loss before it. A later stage holding more loses
// nothing: the collector reads the file's other records too. Counters read a moment
// apart may lag one another by a batch (Loki holds a push before Fluent Bit counts it
// sent), so a dip in the middle is no loss when the end holds everything.
func (s RecordStages) LosingStage(exactExpected *int64) string {
	type stage struct {
		name  string
		count int64
	}
	var chain []stage
	if exactExpected != nil {
		chain = append(chain, stage{"expected", *exactExpected})
	}
	for _, counted := range s.Pipeline() {
		if counted.Count == nil || (counted.Name == s.UnverifiedAt && s.Unverified > 0) {
			continue
		}
		count := *counted.Count
		if counted.Name == "stored" {
			count -= s.Duplicates
		}
		chain = append(chain, stage{counted.Name, count})
	}
	if len(chain) < 2 || chain[len(chain)-1].count >= chain[0].count {
		return ""
	}
	for i := 1; i < len(chain); i++ {
		if chain[i].count < chain[i-1].count {
			return chain[i].name
		}
	}
	return ""
}

// ExactExpected is the expected records when the count is exact, nil for an estimate.
func (r Records) ExactExpected() *int64 {
	if r.ExpectedIsEstimate {
		return nil
	}
	return &r.Expected
}

// KnownDropped is how many records are known to be dropped: exactly when expected is
// exact, at least when it is a lower bound; zero when none is known to be.
func (r Records) KnownDropped() int64 {
	switch {
	case r.Dropped != nil:
		return *r.Dropped
	case r.DroppedAtLeast != nil:
		return *r.DroppedAtLeast
	}
	return 0
}
