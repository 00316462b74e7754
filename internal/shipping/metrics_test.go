package shipping

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
)

// fluentBitPage is the shape of Fluent Bit's /api/v2/metrics/prometheus page.
const fluentBitPage = `# HELP fluentbit_uptime Number of seconds that Fluent Bit has been running.
# TYPE fluentbit_uptime counter
fluentbit_uptime{hostname="pod"} 42
# HELP fluentbit_input_records_total Number of input records.
# TYPE fluentbit_input_records_total counter
fluentbit_input_records_total{name="postgresql"} 1200
# HELP fluentbit_filter_drop_records_total Number of dropped records.
# TYPE fluentbit_filter_drop_records_total counter
fluentbit_filter_drop_records_total{name="grep.0"} 50
# HELP fluentbit_input_ingestion_paused Is the input paused or not?
# TYPE fluentbit_input_ingestion_paused gauge
fluentbit_input_ingestion_paused{name="postgresql"} 1
# HELP fluentbit_output_proc_records_total Number of processed output records.
# TYPE fluentbit_output_proc_records_total counter
fluentbit_output_proc_records_total{name="shipped"} 1000
# HELP fluentbit_output_dropped_records_total Number of dropped records.
# TYPE fluentbit_output_dropped_records_total counter
fluentbit_output_dropped_records_total{name="shipped"} 150
# HELP fluentbit_output_retried_records_total Number of retried records.
# TYPE fluentbit_output_retried_records_total counter
fluentbit_output_retried_records_total{name="shipped"} 300
# HELP fluentbit_output_retries_failed_total Number of abandoned batches because the maximum number of re-tries was reached.
# TYPE fluentbit_output_retries_failed_total counter
fluentbit_output_retries_failed_total{name="shipped"} 2
`

// collectorPage has the _total suffixes of current collectors and the names without
// them of older ones.
const collectorPage = `# TYPE otelcol_receiver_accepted_log_records_total counter
otelcol_receiver_accepted_log_records_total{receiver="filelog",transport=""} 900
# TYPE otelcol_exporter_sent_log_records_total counter
otelcol_exporter_sent_log_records_total{exporter="otlphttp"} 800
# TYPE otelcol_exporter_send_failed_log_records counter
otelcol_exporter_send_failed_log_records{exporter="otlphttp"} 90
# TYPE otelcol_exporter_enqueue_failed_log_records_total counter
otelcol_exporter_enqueue_failed_log_records_total{exporter="otlphttp"} 10
`

func TestParseShipperMetrics(t *testing.T) {
	for name, tc := range map[string]struct {
		parse func(string) (ShipperMetrics, error)
		page  string
		want  ShipperMetrics
	}{
		"Fluent Bit": {parseFluentBitString, fluentBitPage,
			ShipperMetrics{Read: 1200, Filtered: 50, InputsPaused: 1, Outputs: map[string]OutputCounters{"shipped": {Sent: 1000, Dropped: 150, Retried: 300}}}},
		"OpenTelemetry Collector": {parseCollectorString, collectorPage,
			ShipperMetrics{Read: 900, Outputs: map[string]OutputCounters{"otlphttp": {Sent: 800, Dropped: 100}}}},
		"Fluent Bit without outputs yet": {parseFluentBitString, "fluentbit_uptime 1\n",
			ShipperMetrics{Outputs: map[string]OutputCounters{}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tc.parse(tc.page)
			if err != nil {
				t.Fatal(err)
			}
			if got.Read != tc.want.Read || len(got.Outputs) != len(tc.want.Outputs) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for output, counters := range tc.want.Outputs {
				if got.Outputs[output] != counters {
					t.Errorf("output %s: %+v, want %+v", output, got.Outputs[output], counters)
				}
			}
		})
	}
}

func TestParseShipperMetricsRejectsWhatIsNoCount(t *testing.T) {
	for name, page := range map[string]string{
		"negative":   "fluentbit_output_proc_records_total{name=\"x\"} -1\n",
		"fractional": "fluentbit_output_proc_records_total{name=\"x\"} 1.5\n",
		"NaN":        "fluentbit_output_proc_records_total{name=\"x\"} NaN\n",
		"not text":   "{\"fluent-bit\": {}}\n",
	} {
		if got, err := parseFluentBitString(page); err == nil {
			t.Errorf("%s: parsed %+v, want an error", name, got)
		}
	}
}

func TestSinceIsTheRunsShare(t *testing.T) {
	before := ShipperMetrics{Read: 100, Outputs: map[string]OutputCounters{"shipped": {Sent: 90, Dropped: 5, Retried: 1}}}
	after := ShipperMetrics{
		Read:    1100,
		Outputs: map[string]OutputCounters{"shipped": {Sent: 1000, Dropped: 55, Retried: 1}},
	}
	run, err := after.Since(before)
	if err != nil {
		t.Fatal(err)
	}
	if want := (OutputCounters{Sent: 910, Dropped: 50}); run.Read != 1000 || run.Total() != want {
		t.Errorf("run %+v, want read 1000 and %+v", run, want)
	}
	if _, err := before.Since(after); err == nil || !strings.Contains(err.Error(), "restarted") {
		t.Errorf("counters going down: error %v, want a restart", err)
	}
}

func TestParseLokiMetrics(t *testing.T) {
	page := `# TYPE loki_discarded_samples_total counter
loki_discarded_samples_total{reason="rate_limited",tenant="bench"} 1234
loki_discarded_samples_total{reason="line_too_long",tenant="bench"} 3
loki_discarded_samples_total{reason="rate_limited",tenant="other"} 99
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.76432212345e+09
`
	got, err := ParseLokiMetrics(strings.NewReader(page), "bench")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Discards) != 2 || got.Discards["rate_limited"] != 1234 || got.Discards["line_too_long"] != 3 ||
		got.Started != 1764322123.45 {
		t.Errorf("metrics %+v, want rate_limited 1234 and line_too_long 3 of tenant bench, started 1764322123.45", got)
	}
}

func TestLokiRestartedSince(t *testing.T) {
	before := LokiMetrics{Discards: map[string]int64{"rate_limited": 10}, Started: 100}
	for name, tc := range map[string]struct {
		after LokiMetrics
		want  bool
	}{
		"same process, more refusals": {LokiMetrics{Discards: map[string]int64{"rate_limited": 12, "line_too_long": 1}, Started: 100}, false},
		"a later start":               {LokiMetrics{Discards: map[string]int64{"rate_limited": 12}, Started: 160}, true},
		"refusals went down":          {LokiMetrics{Discards: map[string]int64{}, Started: 100}, true},
	} {
		if got := tc.after.RestartedSince(before); got != tc.want {
			t.Errorf("%s: restarted %v, want %v", name, got, tc.want)
		}
	}
}

func TestAccount(t *testing.T) {
	exact := records.Expectation{Records: 10000}
	estimate := records.Expectation{Records: 10, Max: 20, Estimate: true}
	for name, tc := range map[string]struct {
		want           records.Expectation
		delivered      int64
		shipped        OutputCounters
		refused        map[string]int64
		stages         *v1alpha1.RecordStages
		dropped        *int64
		droppedAtLeast *int64
		reason         string
		accounting     bool
	}{
		"everything delivered": {exact, 10000, OutputCounters{Sent: 10000}, nil, nil, new(int64(0)), nil, "", false},
		"Loki refused records": {exact, 8766, OutputCounters{Sent: 10000, Retried: 2000}, map[string]int64{"rate_limited": 1234}, nil,
			new(int64(1234)), nil, "loki refused pushes of 1234 samples, retries included (rate_limited 1234); 2000 records needed retries", false},
		"the shipper dropped records": {exact, 9000, OutputCounters{Sent: 9000, Dropped: 1000}, nil, nil,
			new(int64(1000)), nil, "the shipper dropped 1000 records (errors or retries exhausted)", false},
		"no one reports the loss": {exact, 9999, OutputCounters{Sent: 9999}, map[string]int64{"rate_limited": 0}, nil,
			new(int64(1)), nil, "neither the shipper nor Loki reports a loss: the records were lost before the shipper read them, or are still in its buffer", false},
		"more delivered than expected":       {exact, 10002, OutputCounters{Sent: 10002}, nil, nil, new(int64(-2)), nil, "", true},
		"an estimate reached has no dropped": {estimate, 15, OutputCounters{Sent: 15, Retried: 3}, nil, nil, nil, nil, "", false},
		// Fewer records than the estimate's lower bound: at least the shortfall was lost,
		// and the shipper says where.
		"short of an estimate's lower bound": {estimate, 5, OutputCounters{Sent: 5, Dropped: 5}, nil, nil,
			nil, new(int64(5)), "the shipper dropped 5 records (errors or retries exhausted)", false},
		// Records still in the file behind a paused input are delayed, and said to be.
		"unread behind a paused input": {exact, 4000, OutputCounters{Sent: 4000}, nil,
			&v1alpha1.RecordStages{Written: new(int64(10000)), Read: new(int64(4000)), Sent: new(int64(4000)), Stored: new(int64(4000)), LostAt: "read", InputPausedSeconds: 12.5},
			new(int64(6000)), nil, "6000 records were still unread in the file when the drain ended: the shipper's input paused " +
				"on its buffer limit for about 12.5 s (delayed; lost only if the file goes before it reads them)", false},
		"unread by an input that never paused": {exact, 9000, OutputCounters{Sent: 9000}, nil,
			&v1alpha1.RecordStages{Written: new(int64(10000)), Read: new(int64(9000)), Sent: new(int64(9000)), LostAt: "read"},
			new(int64(1000)), nil, "1000 records in the file were not read by the shipper", false},
	} {
		t.Run(name, func(t *testing.T) {
			var stageReasons []string
			if tc.stages != nil && tc.stages.LostAt == "read" {
				stageReasons = append(stageReasons, UnreadReason(*tc.stages))
			}
			got := Account(tc.want, tc.delivered, tc.shipped, tc.refused, tc.stages, LokiTrouble{}, stageReasons,
				ShipperUnexplained)
			if (got.Dropped == nil) != (tc.dropped == nil) || got.Dropped != nil && *got.Dropped != *tc.dropped {
				t.Errorf("dropped %v, want %v", deref(got.Dropped), deref(tc.dropped))
			}
			if (got.DroppedAtLeast == nil) != (tc.droppedAtLeast == nil) ||
				got.DroppedAtLeast != nil && *got.DroppedAtLeast != *tc.droppedAtLeast {
				t.Errorf("dropped at least %v, want %v", deref(got.DroppedAtLeast), deref(tc.droppedAtLeast))
			}
			if got.DropReason != tc.reason {
				t.Errorf("reason %q, want %q", got.DropReason, tc.reason)
			}
			if (got.AccountingError != "") != tc.accounting {
				t.Errorf("accounting error %q, want one: %v", got.AccountingError, tc.accounting)
			}
		})
	}
}

// TestAccountExplainsDropsByLokisTroubleFirst: a restarted or silent Loki is why the
// shipper's retries ran out, so it comes first.
func TestAccountExplainsDropsByLokisTroubleFirst(t *testing.T) {
	trouble := LokiTrouble{Restarted: true, CountFell: 700, Unanswered: 12, LastError: "querying loki: connection refused"}
	got := Account(records.Expectation{Records: 10000}, 8000, OutputCounters{Sent: 9500, Dropped: 500}, nil, nil, trouble,
		nil, ShipperUnexplained)
	want := "loki restarted during the run: records it held in memory or on storage that did not survive the restart " +
		"are lost; loki's count of the run's records fell 700 below its highest: loki lost records it had stored; " +
		"loki did not answer 12 counts during the drain (last: querying loki: connection refused); " +
		"the shipper dropped 500 records (errors or retries exhausted)"
	if got.Dropped == nil || *got.Dropped != 2000 || got.DropReason != want {
		t.Errorf("records %+v, want 2000 dropped: %s", got, want)
	}
	if got := Account(records.Expectation{Records: 10000}, 10000, OutputCounters{Sent: 10000}, nil, nil, trouble,
		nil, ShipperUnexplained); got.DropReason != "" {
		t.Errorf("nothing dropped, yet the reason %q", got.DropReason)
	}
}

func deref(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}

func parseFluentBitString(page string) (ShipperMetrics, error) {
	return fluentBit{}.ParseMetrics(strings.NewReader(page))
}

func parseCollectorString(page string) (ShipperMetrics, error) {
	return otelCollector{}.ParseMetrics(strings.NewReader(page))
}

// TestStagesNameWhereRecordsWentMissing: the first stage below the one before it is the
// losing stage; a later stage holding more than an earlier one loses nothing.
func TestStagesNameWhereRecordsWentMissing(t *testing.T) {
	stored := func(n int64) *int64 { return &n }
	shipped := func(read, filtered, sent int64) ShipperMetrics {
		return ShipperMetrics{Read: read, Filtered: filtered, Outputs: map[string]OutputCounters{"shipped": {Sent: sent}}}
	}
	for name, tc := range map[string]struct {
		written int64
		shipped ShipperMetrics
		stored  *int64
		lostAt  string
	}{
		"nothing lost, stored":              {1000, shipped(1200, 200, 1000), stored(1000), ""},
		"nothing lost, no backend":          {1000, shipped(1000, 0, 1000), nil, ""},
		"the shipper did not read them":     {1000, shipped(700, 0, 700), stored(700), "read"},
		"the output did not send them":      {1000, shipped(1000, 0, 400), stored(400), "sent"},
		"the backend refused them":          {1000, shipped(1000, 0, 1000), stored(300), "stored"},
		"sent read before Loki counted it":  {1000, shipped(1000, 0, 999), stored(1000), ""},
		"read more than written, then lost": {1000, shipped(5000, 0, 5000), stored(10), "stored"},
	} {
		t.Run(name, func(t *testing.T) {
			got := Stages(tc.written, tc.shipped, tc.stored)
			if lostAt := got.LosingStage(&tc.written); lostAt != tc.lostAt {
				t.Errorf("lost at %q, want %q (%+v)", lostAt, tc.lostAt, got)
			}
			if *got.Written != tc.written || *got.Read != tc.shipped.Kept() || *got.Sent != tc.shipped.Total().Sent ||
				got.Stored != tc.stored {
				t.Errorf("stages %+v do not carry the counts", got)
			}
		})
	}
}

func TestPendingIsWhatTheOutputsHaveNotSettled(t *testing.T) {
	metrics := ShipperMetrics{
		Read:     1200,
		Filtered: 200,
		Outputs:  map[string]OutputCounters{"shipped": {Sent: 900, Dropped: 60, Retried: 500}},
	}
	if got := metrics.Pending(); got != 40 {
		t.Errorf("pending %d, want 1000 kept - 900 sent - 60 dropped = 40", got)
	}
}
