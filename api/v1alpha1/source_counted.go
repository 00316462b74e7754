package v1alpha1

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CounterExtension is the PostgreSQL extension that counts, inside the server, the
// records it sends to its log by session (logbench_counter/ in the repository). The
// logging settings whose records no model predicts need it.
const CounterExtension = "logbench_counter"

// SourceCountedParameters are the server parameters of the settings of l that need a
// count at the source, those set.
func (l LoggingSpec) SourceCountedParameters() map[string]string {
	parameters := map[string]string{}
	if l.MinDurationSample != nil {
		parameters["log_min_duration_sample"] = strconv.Itoa(int(*l.MinDurationSample))
	}
	if l.StatementSampleRate != nil {
		parameters["log_statement_sample_rate"] = formatRate(*l.StatementSampleRate)
	}
	if l.TransactionSampleRate != nil {
		parameters["log_transaction_sample_rate"] = formatRate(*l.TransactionSampleRate)
	}
	if l.LockWaits {
		parameters["log_lock_waits"] = "on"
	}
	if l.TempFiles != nil {
		parameters["log_temp_files"] = strconv.Itoa(int(*l.TempFiles))
	}
	if explain := l.AutoExplain; explain != nil {
		parameters["auto_explain.log_min_duration"] = strconv.Itoa(int(explain.MinDuration))
		parameters["auto_explain.log_analyze"] = onOff(explain.Analyze)
		parameters["auto_explain.log_buffers"] = onOff(explain.Buffers)
		parameters["auto_explain.log_verbose"] = onOff(explain.Verbose)
		parameters["auto_explain.log_nested_statements"] = onOff(explain.NestedStatements)
		parameters["auto_explain.log_format"] = string(explain.EffectiveFormat())
		if explain.SampleRate != nil {
			parameters["auto_explain.sample_rate"] = formatRate(*explain.SampleRate)
		}
	}
	return parameters
}

// EffectiveFormat is auto_explain.log_format: text unless set.
func (a *AutoExplainSpec) EffectiveFormat() AutoExplainFormat {
	if a.Format == "" {
		return AutoExplainText
	}
	return a.Format
}

// The formats of auto_explain's plans.
const (
	AutoExplainText AutoExplainFormat = "text"
	AutoExplainXML  AutoExplainFormat = "xml"
	AutoExplainJSON AutoExplainFormat = "json"
	AutoExplainYAML AutoExplainFormat = "yaml"
)

// formatRate writes a share as PostgreSQL reads a real parameter.
func formatRate(rate float64) string {
	return strconv.FormatFloat(rate, 'g', -1, 64)
}

// UsesAutoExplain reports whether the server parameters load auto_explain: any
// auto_explain.* one, as CloudNativePG decides.
func UsesAutoExplain(parameters map[string]string) bool {
	for name := range parameters {
		if strings.HasPrefix(name, "auto_explain.") {
			return true
		}
	}
	return false
}

// overrideSourceCounted sets the destination's own settings that need a count at the
// source over l's.
func (l *LoggingSpec) overrideSourceCounted(o *LoggingOverride) {
	for _, field := range []struct{ into, from **int32 }{
		{&l.MinDurationSample, &o.MinDurationSample}, {&l.TempFiles, &o.TempFiles},
	} {
		if *field.from != nil {
			*field.into = *field.from
		}
	}
	for _, field := range []struct{ into, from **float64 }{
		{&l.StatementSampleRate, &o.StatementSampleRate}, {&l.TransactionSampleRate, &o.TransactionSampleRate},
	} {
		if *field.from != nil {
			*field.into = *field.from
		}
	}
	if o.AutoExplain != nil {
		l.AutoExplain = o.AutoExplain
	}
	override(&l.LockWaits, o.LockWaits)
}

// sourceCountedSettings names the settings that need a count at the source in short,
// for LoggingSettings: those that log records.
func (l LoggingSpec) sourceCountedSettings() []string {
	var settings []string
	if l.MinDurationSample != nil && *l.MinDurationSample >= 0 {
		settings = append(settings, "minDurationSample="+strconv.Itoa(int(*l.MinDurationSample)))
	}
	if l.StatementSampleRate != nil {
		settings = append(settings, "statementSampleRate="+formatRate(*l.StatementSampleRate))
	}
	if l.TransactionSampleRate != nil && *l.TransactionSampleRate > 0 {
		settings = append(settings, "transactionSampleRate="+formatRate(*l.TransactionSampleRate))
	}
	if explain := l.AutoExplain; explain != nil {
		autoExplain := []string{"autoExplain=" + strconv.Itoa(int(explain.MinDuration))}
		format := explain.EffectiveFormat()
		for _, option := range []struct {
			name string
			on   bool
		}{
			{"analyze", explain.Analyze}, {"buffers", explain.Buffers}, {"verbose", explain.Verbose},
			{"nested", explain.NestedStatements}, {string(format), format != AutoExplainText},
		} {
			if option.on {
				autoExplain = append(autoExplain, option.name)
			}
		}
		if explain.SampleRate != nil {
			autoExplain = append(autoExplain, "sample="+formatRate(*explain.SampleRate))
		}
		settings = append(settings, strings.Join(autoExplain, "/"))
	}
	if l.LockWaits {
		settings = append(settings, "lockWaits=on")
	}
	if l.TempFiles != nil && *l.TempFiles >= 0 {
		settings = append(settings, "tempFiles="+strconv.Itoa(int(*l.TempFiles)))
	}
	return settings
}

// UnpredictedSettings names, as sourceCountedSettings does, the settings of l that log
// records no model predicts: those set to log some (a sample rate of 0 and a threshold of
// -1 log none, and statementSampleRate samples only what minDurationSample passes).
func (l LoggingSpec) UnpredictedSettings() []string {
	var logging LoggingSpec
	if l.MinDurationSample != nil && *l.MinDurationSample >= 0 &&
		(l.StatementSampleRate == nil || *l.StatementSampleRate > 0) {
		logging.MinDurationSample, logging.StatementSampleRate = l.MinDurationSample, l.StatementSampleRate
	}
	if l.TransactionSampleRate != nil && *l.TransactionSampleRate > 0 {
		logging.TransactionSampleRate = l.TransactionSampleRate
	}
	if l.AutoExplain != nil && (l.AutoExplain.SampleRate == nil || *l.AutoExplain.SampleRate > 0) {
		logging.AutoExplain = l.AutoExplain
	}
	logging.LockWaits, logging.TempFiles = l.LockWaits, l.TempFiles
	return logging.sourceCountedSettings()
}

// sourceCountedFields names the fields of spec.logging that need a count at the source,
// those set.
func (l LoggingSpec) sourceCountedFields() []string {
	return setFields([]namedField{
		{"minDurationSample", l.MinDurationSample != nil}, {"statementSampleRate", l.StatementSampleRate != nil},
		{"transactionSampleRate", l.TransactionSampleRate != nil}, {"autoExplain", l.AutoExplain != nil},
		{"lockWaits", l.LockWaits}, {"tempFiles", l.TempFiles != nil},
	})
}

// sourceCountedFields names the fields of a destination's logging that need a count at
// the source, those set.
func (o *LoggingOverride) sourceCountedFields() []string {
	return setFields([]namedField{
		{"minDurationSample", o.MinDurationSample != nil}, {"statementSampleRate", o.StatementSampleRate != nil},
		{"transactionSampleRate", o.TransactionSampleRate != nil}, {"autoExplain", o.AutoExplain != nil},
		{"lockWaits", o.LockWaits != nil}, {"tempFiles", o.TempFiles != nil},
	})
}

type namedField struct {
	name string
	set  bool
}

func setFields(fields []namedField) []string {
	var set []string
	for _, f := range fields {
		if f.set {
			set = append(set, f.name)
		}
	}
	return set
}

// FieldsNeedingCounter lists the fields of the spec, as paths, that set logging or a
// workload whose records only a count at the source knows (sampling, auto_explain, lock
// waits, temporary files, the user's scripts): each needs the CounterExtension in the
// servers.
func (s *LoggingBenchmarkSpec) FieldsNeedingCounter() []string {
	var paths []string
	for _, name := range s.Logging.sourceCountedFields() {
		paths = append(paths, "spec.logging."+name)
	}
	for i, dest := range s.Destinations {
		if dest.Logging == nil {
			continue
		}
		for _, name := range dest.Logging.sourceCountedFields() {
			paths = append(paths, fmt.Sprintf("spec.destinations[%d].logging.%s", i, name))
		}
	}
	if s.Workload.Scripts != nil {
		paths = append(paths, "spec.workload.scripts")
	}
	return paths
}

// ErrCounterNotLoaded: the benchmark's clusters do not load the CounterExtension, so
// no count at the source can make the expected records of these settings exact. The
// requester-rights ValidatingAdmissionPolicy refuses the same with the same words.
var ErrCounterNotLoaded = errors.New("need the " + CounterExtension + " extension, which counts the records " +
	"the server logs at the source: set spec.postgres.counter (source OperandImage with an operand image " +
	"that has it, as logbench's PostgreSQL images do, or ExtensionImage on PostgreSQL 18), " +
	"or measure these settings with logbench run --local")

// ValidateForClusters refuses what the operator cannot measure in its clusters: the
// settings that need a count at the source (FieldsNeedingCounter) without
// spec.postgres.counter. Local runs load the counter themselves and ignore the field.
func (s *LoggingBenchmarkSpec) ValidateForClusters() error {
	if fields := s.FieldsNeedingCounter(); len(fields) > 0 && s.Postgres.Counter == nil {
		return fmt.Errorf("%s %w", strings.Join(fields, ", "), ErrCounterNotLoaded)
	}
	if counter := s.Postgres.Counter; counter != nil && counter.Source == CounterInOperandImage &&
		s.Postgres.ImageName == "" {
		return ErrCounterNotInDefaultImage
	}
	return nil
}

// ErrCounterNotInDefaultImage: CloudNativePG's default operand image, which an empty
// imageName selects, has no CounterExtension, and a server told to preload it never
// starts.
var ErrCounterNotInDefaultImage = errors.New("spec.postgres.counter.source OperandImage needs " +
	"spec.postgres.imageName: an operand image with the " + CounterExtension + " extension installed " +
	"(logbench's PostgreSQL images, or yours built as logbench_counter/README.md says); " +
	"CloudNativePG's default image does not have it")
