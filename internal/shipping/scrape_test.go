package shipping

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
)

func TestScraperReadsTheShippersPortAndPage(t *testing.T) {
	for name, tc := range map[string]struct {
		kind    v1alpha1.ShipperKind
		podIP   string
		wantURL string
		page    string
		want    OutputCounters
	}{
		"Fluent Bit": {v1alpha1.ShipperFluentBit, "10.1.2.3", "http://10.1.2.3:2020/api/v2/metrics/prometheus",
			fluentBitPage, OutputCounters{Sent: 1000, Dropped: 150, Retried: 300}},
		"collector on IPv6": {v1alpha1.ShipperOpenTelemetryCollector, "fd00::5", "http://[fd00::5]:8888/metrics",
			collectorPage, OutputCounters{Sent: 800, Dropped: 100}},
	} {
		t.Run(name, func(t *testing.T) {
			target := Target{
				Destination: v1alpha1.Destination{Type: v1alpha1.DestinationLoki, Shipper: &v1alpha1.ShipperSpec{Kind: tc.kind}},
			}
			scraper := target.Scraper(tc.podIP, nil)
			if scraper.URL != tc.wantURL {
				t.Errorf("URL %s, want %s", scraper.URL, tc.wantURL)
			}
			server := httptest.NewServer(
				http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.page) }),
			)
			defer server.Close()
			scraper.URL = server.URL
			metrics, err := scraper.Read(context.Background())
			if err != nil || metrics.Total() != tc.want {
				t.Fatalf("counters %+v, %v; want %+v", metrics.Total(), err, tc.want)
			}
		})
	}
}

func TestMetricsReadsLokisRefusalsOfTheTenant(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" || r.Header.Get("X-Scope-OrgID") != "bench" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, `loki_discarded_samples_total{reason="rate_limited",tenant="bench"} 40
loki_discarded_samples_total{reason="rate_limited",tenant="other"} 7
`)
	}))
	defer server.Close()
	metrics, err := (&LokiClient{URL: server.URL + "/", TenantID: "bench"}).Metrics(context.Background())
	if err != nil || len(metrics.Discards) != 1 || metrics.Discards["rate_limited"] != 40 {
		t.Fatalf("discards %v, %v; want rate_limited 40", metrics.Discards, err)
	}
}

func TestNewLokiClientTakesTheCredentialsFromTheEnvironment(t *testing.T) {
	env := map[string]string{envLokiUsername: "user", envLokiPassword: "pass", envLokiBearerToken: "token"}
	client := NewLokiClient(
		v1alpha1.LokiSpec{URL: "http://loki:3100", TenantID: "t"},
		func(name string) string { return env[name] },
	)
	if *client != (LokiClient{URL: "http://loki:3100", TenantID: "t", Username: "user", Password: "pass", BearerToken: "token"}) {
		t.Errorf("client %+v", *client)
	}
}

// TestLokiThatCannotAnswerIsUnavailable: a refused connection or a 5xx or 429 answer may
// pass (a drain counts again); a refusal of the request itself does not.
func TestLokiThatCannotAnswerIsUnavailable(t *testing.T) {
	status := http.StatusServiceUnavailable
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "not ready", status)
	}))
	client := &LokiClient{URL: server.URL, TenantID: "bench"}
	count := func() error {
		_, err := client.CountRecords(context.Background(), `{job="logbench"}`, "lb_x", time.Now(), time.Now())
		return err
	}
	var unavailable *bench.UnavailableError
	for _, status = range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		if err := count(); !errors.As(err, &unavailable) {
			t.Errorf("answer %d: error %v, want unavailable", status, err)
		}
	}
	status = http.StatusUnauthorized
	if err := count(); err == nil || errors.As(err, &unavailable) {
		t.Errorf("answer 401: error %v, want a failure that no retry mends", err)
	}
	server.Close()
	err := count()
	if !errors.As(err, &unavailable) || strings.Contains(err.Error(), "query=") {
		t.Errorf("closed server: error %v, want unavailable, without the query's URL", err)
	}
}
