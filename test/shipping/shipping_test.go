//go:build shipping

// Package shipping_test proves on this machine that the shipping pair the local e2e suite
// uses works: the OpenTelemetry Collector of hack/otelcol tails a csvlog-like file and
// ships it over OTLP/HTTP to a real Loki (single binary, filesystem storage), and the
// records Loki holds, the collector's own counters and Loki's refusals add up. It needs
// bin/loki and bin/otelcol (make loki otelcol), so it carries the shipping build tag and
// runs with make test-shipping, not with make test.
package shipping_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
	"github.com/logbench/logbench/internal/testenv"
)

// serviceName is the resource attribute service.name the collector sets; Loki turns it
// into the stream label service_name by default.
const serviceName = "logbench-shipping-test"

// collectorConfig tails %[1]s from its beginning and ships to the Loki at %[2]s; %[3]d
// is the port of the collector's own metrics, %[4]d the batch size and %[5]s the
// exporter's retry budget. A csvlog record starts with its timestamp; the lines of a
// quoted field that holds newlines do not.
const collectorConfig = `receivers:
  filelog:
    include: [%[1]s]
    start_at: beginning
    multiline:
      line_start_pattern: '^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}'
    resource:
      service.name: ` + serviceName + `
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 256
    spike_limit_mib: 64
  batch:
    send_batch_size: %[4]d
    timeout: 200ms
exporters:
  otlp_http:
    endpoint: %[2]s/otlp
    retry_on_failure:
      enabled: true
      initial_interval: 200ms
      max_interval: 1s
      max_elapsed_time: %[5]s
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: detailed
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %[3]d
  pipelines:
    logs:
      receivers: [filelog]
      processors: [memory_limiter, batch]
      exporters: [otlp_http]
`

// Every record is delivered: Loki holds exactly the records written, and the collector
// reports each of them accepted and sent, none failed.
func TestShipsEveryRecordToLoki(t *testing.T) {
	const records = 2000
	loki := process{url: testenv.StartLoki(t, "")}
	logFile := filepath.Join(t.TempDir(), "postgresql.csv")
	collector := startCollector(t, logFile, loki.url, 500, "30s")
	tag := writeCSVLog(t, logFile, records)

	count := waitForLokiCount(t, loki.url, tag, records, 60*time.Second)
	if count != records {
		t.Fatalf("Loki holds %d of the %d records tagged %s", count, records, tag)
	}
	// The collector stores each record as it is in the file: read back, each holds its
	// own identity.
	readBack := shipping.NewLokiClient(v1alpha1.LokiSpec{URL: loki.url}, func(string) string { return "" })
	parse, _ := shipping.IdentityOf(v1alpha1.Destination{Type: v1alpha1.DestinationLoki,
		Shipper: &v1alpha1.ShipperSpec{Format: v1alpha1.FormatCSVLog}})
	read, err := readBack.ReadIdentities(context.Background(), fmt.Sprintf(`{service_name=%q}`, serviceName), tag,
		time.Now().Add(-time.Minute), time.Now(), parse, shipping.MaxIdentityLines)
	if err != nil || read != (shipping.IdentityCount{Lines: records, Distinct: records}) {
		t.Errorf("read back %+v, %v; want %d distinct records", read, err, records)
	}
	metrics := waitForSettled(t, collector, records, 30*time.Second)
	if metrics.failed != 0 {
		t.Errorf("collector reports %v records failed to send, want 0", metrics.failed)
	}
	if metrics.sent != records {
		t.Errorf("collector reports %v records sent, want %d", metrics.sent, records)
	}
}

// A Loki whose ingestion limit is far below the burst refuses pushes with 429; once the
// exporter's retries run out those records are lost. Loki then holds fewer records than
// were written, exactly as many as the collector reports sent, the collector reports the
// rest failed, and Loki counts its refusals as rate_limited.
func TestLokiRateLimitDropsRecords(t *testing.T) {
	const records = 5000
	// About 250 bytes a record: 100-record pushes of ~25 kB fit the 60 kB burst, and the
	// 20 kB/s refill admits a few of them while the file is read in well under a second.
	loki := process{url: testenv.StartLoki(t, "  ingestion_rate_mb: 0.02\n  ingestion_burst_size_mb: 0.06")}
	logFile := filepath.Join(t.TempDir(), "postgresql.csv")
	collector := startCollector(t, logFile, loki.url, 100, "3s")
	tag := writeCSVLog(t, logFile, records)

	metrics := waitForSettled(t, collector, records, 90*time.Second)
	if metrics.failed == 0 {
		t.Fatalf("collector reports no records failed to send (sent %v): the limit did not bite", metrics.sent)
	}
	count := waitForLokiCount(t, loki.url, tag, int(metrics.sent), 30*time.Second)
	if count >= records {
		t.Errorf("Loki holds %d of %d records, want fewer", count, records)
	}
	if float64(count) != metrics.sent {
		t.Errorf("Loki holds %d records, the collector reports %v sent", count, metrics.sent)
	}
	refused := scrape(t, loki.url+"/metrics", "loki_discarded_samples_total", `reason="rate_limited"`)
	t.Logf("Loki: loki_discarded_samples_total{reason=\"rate_limited\"} = %v", refused)
	if refused == 0 {
		t.Errorf("Loki counts no rate_limited discards")
	}
}

type process struct {
	url string
}

// startCollector runs bin/otelcol with collectorConfig until the test ends, and waits
// until its metrics endpoint answers.
func startCollector(t *testing.T, logFile, lokiURL string, batch int, retryBudget string) process {
	t.Helper()
	dir := t.TempDir()
	metricsPort := testenv.FreePort(t)
	config := filepath.Join(dir, "otelcol.yaml")
	writeFile(t, config, fmt.Sprintf(collectorConfig, logFile, lokiURL, metricsPort, batch, retryBudget))
	base := fmt.Sprintf("http://127.0.0.1:%d", metricsPort)
	testenv.StartProcess(t, testenv.ProjectBinary(t, "otelcol", "make otelcol"), "--config="+config)
	testenv.WaitFor(t, "the collector's metrics endpoint", 30*time.Second, func() error {
		return testenv.HTTPOK(base + "/metrics")
	})
	return process{url: base}
}

// writeCSVLog appends n csvlog-like records to path, every third one with a statement
// spanning two lines, each holding a tag unique to the test run, which it returns.
func writeCSVLog(t *testing.T, path string, n int) string {
	t.Helper()
	tag := fmt.Sprintf("lbtag%d", time.Now().UnixNano())
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	writer := bufio.NewWriter(file)
	for i := range n {
		statement := fmt.Sprintf("SELECT abalance FROM pgbench_accounts WHERE aid = %d; -- %s", i, tag)
		if i%3 == 0 {
			statement = fmt.Sprintf("SELECT abalance\n  FROM pgbench_accounts WHERE aid = %d; -- %s", i, tag)
		}
		stamp := time.Now().UTC().Format("2006-01-02 15:04:05.000 UTC")
		if _, err := fmt.Fprintf(writer, "%s,\"postgres\",\"app\",4242,\"[local]\",6650f1a2.1092,%d,\"SELECT\","+
			"%s,3/%d,0,LOG,00000,\"statement: %s\",,,,,,,,,\"pgbench\",\"client backend\",,0\n",
			stamp, i+1, stamp[:19]+" UTC", i, statement); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	return tag
}

// waitForLokiCount polls Loki for the number of records holding tag until it reaches
// want or timeout passes, and returns the last count.
func waitForLokiCount(t *testing.T, lokiURL, tag string, want int, timeout time.Duration) int {
	t.Helper()
	query := fmt.Sprintf(`sum(count_over_time({service_name=%q} |= %q [10m]))`, serviceName, tag)
	var count int
	deadline := time.Now().Add(timeout)
	for {
		var err error
		count, err = lokiCount(lokiURL, query)
		if err != nil {
			t.Logf("querying Loki: %v", err)
		}
		if count == want || time.Now().After(deadline) {
			t.Logf("Loki: %s = %d", query, count)
			return count
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// lokiCount runs an instant LogQL query whose result is one number (none: 0).
func lokiCount(lokiURL, query string) (int, error) {
	response, err := http.Get(lokiURL + "/loki/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	defer func() { _ = response.Body.Close() }()
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(response.Body).Decode(&body); err != nil {
		return 0, fmt.Errorf("status %s: %w", response.Status, err)
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("status %s: %s", response.Status, body.Status)
	}
	if len(body.Data.Result) == 0 {
		return 0, nil
	}
	text, ok := body.Data.Result[0].Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("unexpected value %v", body.Data.Result[0].Value)
	}
	return strconv.Atoi(text)
}

type collectorMetrics struct {
	accepted, sent, failed float64
}

// waitForSettled waits until the collector's receiver accepted want records and its
// exporter either sent or gave up on each of them, logging every log-record counter it
// exposes.
func waitForSettled(t *testing.T, collector process, want int, timeout time.Duration) collectorMetrics {
	t.Helper()
	var m collectorMetrics
	testenv.WaitFor(t, "the collector to settle every record", timeout, func() error {
		m = collectorMetrics{
			accepted: scrape(t, collector.url+"/metrics", "otelcol_receiver_accepted_log_records_total", ""),
			sent:     scrape(t, collector.url+"/metrics", "otelcol_exporter_sent_log_records_total", ""),
			failed:   scrape(t, collector.url+"/metrics", "otelcol_exporter_send_failed_log_records_total", ""),
		}
		if m.accepted != float64(want) || m.sent+m.failed != m.accepted {
			return fmt.Errorf("accepted %v, sent %v, failed %v", m.accepted, m.sent, m.failed)
		}
		return nil
	})
	for _, line := range metricLines(t, collector.url+"/metrics") {
		if strings.Contains(line, "log_records") {
			t.Logf("collector: %s", line)
		}
	}
	return m
}

// scrape sums the samples of metric name whose labels contain filter.
func scrape(t *testing.T, endpoint, name, filter string) float64 {
	t.Helper()
	var sum float64
	for _, line := range metricLines(t, endpoint) {
		metric, value, ok := strings.Cut(line, " ")
		if !ok || (metric != name && !strings.HasPrefix(metric, name+"{")) || !strings.Contains(metric, filter) {
			continue
		}
		number, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", endpoint, line, err)
		}
		sum += number
	}
	return sum
}

// metricLines returns the sample lines of a Prometheus text endpoint.
func metricLines(t *testing.T, endpoint string) []string {
	t.Helper()
	response, err := http.Get(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = response.Body.Close() }()
	var lines []string
	scanner := bufio.NewScanner(response.Body)
	scanner.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for scanner.Scan() {
		if line := scanner.Text(); line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
