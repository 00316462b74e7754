package shipping

import (
	"fmt"
	"io"
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// OutputCounters are the cumulative record counters of one shipper output.
type OutputCounters struct {
	// Sent records the output delivered.
	Sent int64
	// Dropped records the output gave up on (retries exhausted, unrecoverable errors,
	// a full queue).
	Dropped int64
	// Retried records that needed at least one more attempt.
	Retried int64
}

// ShipperMetrics are a shipper's cumulative record counters.
type ShipperMetrics struct {
	// Read records, over every input.
	Read int64
	// Filtered records a filter removed (Fluent Bit's grep keeps only the records of the
	// destination's runs).
	Filtered int64
	// InputsPaused is how many inputs have stopped reading right now because their
	// buffer is full (Fluent Bit's mem_buf_limit): a gauge, not a count of records.
	InputsPaused int64
	// Outputs holds the counters of each output by name.
	Outputs map[string]OutputCounters
}

// counterRule maps one counter to a field of ShipperMetrics, grouped by the label that
// names the input or output.
type counterRule struct {
	label string
	add   func(m *ShipperMetrics, output string, value int64)
}

func toRead(m *ShipperMetrics, _ string, v int64)     { m.Read += v }
func toFiltered(m *ShipperMetrics, _ string, v int64) { m.Filtered += v }
func toPaused(m *ShipperMetrics, _ string, v int64)   { m.InputsPaused += v }

func toOutput(field func(*OutputCounters) *int64) func(*ShipperMetrics, string, int64) {
	return func(m *ShipperMetrics, output string, v int64) {
		counters := m.Outputs[output]
		*field(&counters) += v
		m.Outputs[output] = counters
	}
}

var (
	sent    = toOutput(func(c *OutputCounters) *int64 { return &c.Sent })
	dropped = toOutput(func(c *OutputCounters) *int64 { return &c.Dropped })
	retried = toOutput(func(c *OutputCounters) *int64 { return &c.Retried })
)

// parseCounters sums the samples of the page that rules name into ShipperMetrics; a
// name also matches without its _total suffix (see collectorCounters).
func parseCounters(r io.Reader, rules map[string]counterRule) (ShipperMetrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return ShipperMetrics{}, fmt.Errorf("reading the shipper's metrics: %w", err)
	}
	metrics := ShipperMetrics{Outputs: map[string]OutputCounters{}}
	for name, family := range families {
		rule, ok := rules[name]
		if !ok {
			rule, ok = rules[strings.TrimSuffix(name, "_total")]
		}
		if !ok {
			continue
		}
		for _, metric := range family.GetMetric() {
			value, err := count(name, metric)
			if err != nil {
				return ShipperMetrics{}, err
			}
			rule.add(&metrics, labelValue(metric, rule.label), value)
		}
	}
	return metrics, nil
}

// maxCount bounds a record count far above any run (2^40, a trillion records), so that
// sums of counters cannot overflow.
const maxCount = 1 << 40

// count reads a counter (or a gauge, or an untyped sample, as some exporters write
// them) as a count: a whole number, never negative.
func count(name string, metric *dto.Metric) (int64, error) {
	var value float64
	switch {
	case metric.GetCounter() != nil:
		value = metric.GetCounter().GetValue()
	case metric.GetGauge() != nil:
		value = metric.GetGauge().GetValue()
	default:
		value = metric.GetUntyped().GetValue()
	}
	if math.IsNaN(value) || value < 0 || value > maxCount || value != math.Trunc(value) {
		return 0, fmt.Errorf("metric %s holds %v, which is not a record count", name, value)
	}
	return int64(value), nil
}

func labelValue(metric *dto.Metric, name string) string {
	for _, pair := range metric.GetLabel() {
		if pair.GetName() == name {
			return pair.GetValue()
		}
	}
	return ""
}

// Kept is the records the shipper read and no filter removed.
func (m ShipperMetrics) Kept() int64 { return m.Read - m.Filtered }

// Pending is how many kept records the outputs have neither sent nor dropped yet: in
// the buffer, or waiting for a retry.
func (m ShipperMetrics) Pending() int64 {
	total := m.Total()
	return m.Kept() - total.Sent - total.Dropped
}

// Total sums the counters of every output.
func (m ShipperMetrics) Total() OutputCounters {
	var total OutputCounters
	for _, c := range m.Outputs {
		total.Sent += c.Sent
		total.Dropped += c.Dropped
		total.Retried += c.Retried
	}
	return total
}

// Since returns what the shipper counted after the earlier reading before: the share of
// one run, since runs of a destination follow one another. A counter that went down
// means the shipper restarted in between, and the difference is no count at all.
func (m ShipperMetrics) Since(before ShipperMetrics) (ShipperMetrics, error) {
	restarted := fmt.Errorf(
		"the shipper's counters went down during the run: it restarted, and its counts of the run are lost",
	)
	diff := ShipperMetrics{
		Read:         m.Read - before.Read,
		Filtered:     m.Filtered - before.Filtered,
		InputsPaused: m.InputsPaused,
		Outputs:      map[string]OutputCounters{},
	}
	if diff.Read < 0 || diff.Filtered < 0 {
		return ShipperMetrics{}, restarted
	}
	for name, c := range m.Outputs {
		b := before.Outputs[name]
		d := OutputCounters{Sent: c.Sent - b.Sent, Dropped: c.Dropped - b.Dropped, Retried: c.Retried - b.Retried}
		if d.Sent < 0 || d.Dropped < 0 || d.Retried < 0 {
			return ShipperMetrics{}, restarted
		}
		diff.Outputs[name] = d
	}
	return diff, nil
}

// lokiDiscards is Loki's counter of the records (samples) it refused, by reason
// (rate_limited, line_too_long, too_far_behind, ...) and tenant.
const lokiDiscards = "loki_discarded_samples_total"

// processStart is the Prometheus client's gauge of when the process started, in seconds
// since the epoch: a Loki restart changes it.
const processStart = "process_start_time_seconds"

// LokiMetrics is what Loki's /metrics page says about a tenant's records.
type LokiMetrics struct {
	// Discards are the records Loki refused from the tenant so far, by reason.
	Discards map[string]int64
	// Started is when the Loki process serving the page started, Unix seconds; 0 when
	// the page does not say.
	Started float64
}

// RestartedSince tells whether the Loki that served m is not the one that served
// before: a later start, or refusals that went down.
func (m LokiMetrics) RestartedSince(before LokiMetrics) bool {
	if m.Started != before.Started {
		return true
	}
	for reason, n := range before.Discards {
		if m.Discards[reason] < n {
			return true
		}
	}
	return false
}

// ParseLokiMetrics reads Loki's /metrics page: the records Loki refused from the tenant
// ("fake" when Loki runs without authentication), by reason, and when Loki started.
func ParseLokiMetrics(r io.Reader, tenant string) (LokiMetrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return LokiMetrics{}, fmt.Errorf("reading Loki's metrics: %w", err)
	}
	metrics := LokiMetrics{Discards: map[string]int64{}}
	for _, metric := range families[lokiDiscards].GetMetric() {
		if labelValue(metric, "tenant") != tenant {
			continue
		}
		value, err := count(lokiDiscards, metric)
		if err != nil {
			return LokiMetrics{}, err
		}
		metrics.Discards[labelValue(metric, "reason")] += value
	}
	if started := families[processStart].GetMetric(); len(started) == 1 {
		if value := started[0].GetGauge().GetValue(); value > 0 && !math.IsInf(value, 1) {
			metrics.Started = value
		}
	}
	return metrics, nil
}
