package shipping

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/bench/benchtest"
	"github.com/logbench/logbench/internal/records"
)

func countAnswer(value string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1767322800.5,"` + value + `"]}],"stats":{}}}`
}

func TestCountRecordsSendsTheQueryAndReadsTheCount(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	at := since.Add(90 * time.Second)
	for name, tc := range map[string]struct {
		client        LokiClient
		authorization string
	}{
		"basic auth":   {LokiClient{TenantID: "bench", Username: "u", Password: "p"}, "Basic dTpw"},
		"bearer token": {LokiClient{BearerToken: "t0k"}, "Bearer t0k"},
		"no auth":      {LokiClient{}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				query := r.URL.Query()
				want := `sum(count_over_time({job="logbench"} |= "lb_loki_c1_r1_abc" [390s]))`
				if r.URL.Path != "/prefix/loki/api/v1/query" || query.Get("query") != want ||
					query.Get("time") != fmt.Sprint(at.UnixNano()) {
					t.Errorf("request %s %v, want the query %s at %d", r.URL.Path, query, want, at.UnixNano())
				}
				if r.Header.Get("X-Scope-OrgID") != tc.client.TenantID || r.Header.Get("Authorization") != tc.authorization {
					t.Errorf("headers %v", r.Header)
				}
				fmt.Fprint(w, countAnswer("1234"))
			}))
			defer server.Close()
			client := tc.client
			client.URL = server.URL + "/prefix/"
			got, err := client.CountRecords(context.Background(), `{job="logbench"}`, "lb_loki_c1_r1_abc", since, at)
			if err != nil || got != 1234 {
				t.Fatalf("count %d, %v; want 1234", got, err)
			}
		})
	}
}

func TestCountRecordsReportsLokisErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		status int
		body   string
		want   string
	}{
		"text error": {400, "parse error at line 1, col 5: syntax error\n", "loki answered 400 Bad Request"},
		"JSON error": {429, `{"message":"too many outstanding requests"}`, "loki answered 429 Too Many Requests"},
		// The body is the server's: the status line alone enters the benchmark's status.
		"body echoing a secret": {401, "bad token secret-password", "loki answered 401 Unauthorized"},
		"matrix":                {200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`, `result type "matrix"`},
		"fractional count":      {200, countAnswer("1.5"), `loki counted "1.5" records`},
		"sample without time":   {200, `{"status":"success","data":{"resultType":"vector","result":[{"value":["3"]}]}}`, "is not [time"},
		"not JSON":              {200, "<html>", "not a query result"},
	} {
		t.Run(name, func(t *testing.T) {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			}))
			defer server.Close()
			client := LokiClient{URL: server.URL, Password: "secret-password", Username: "u"}
			_, err := client.CountRecords(context.Background(), "{a=\"b\"}", "tag", time.Now(), time.Now())
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret-password") {
				t.Fatalf("error %v, want it to contain %q and no password", err, tc.want)
			}
		})
	}
}

func TestCountRecordsOfNothingIsZero(t *testing.T) {
	got, err := parseCountResponse([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	if err != nil || got != 0 {
		t.Fatalf("count %d, %v; want 0", got, err)
	}
}

func TestCountRecordsRefusesARangeLokiRefuses(t *testing.T) {
	client := LokiClient{URL: "http://loki.invalid"}
	now := time.Now()
	if _, err := client.CountRecords(context.Background(), "{}", "t", now.Add(-800*time.Hour), now); err == nil ||
		!strings.Contains(err.Error(), "max_query_length") {
		t.Fatalf("error %v, want max_query_length", err)
	}
}

// TestRunCounterDrains drains a RunCounter as the agent's bench.Run does. Loki answers
// with the records that had arrived when the query came, and every query takes 100 ms.
func TestRunCounterDrains(t *testing.T) {
	type arrival struct {
		after time.Duration
		count string
	}
	loki := v1alpha1.Destination{Name: "loki", Type: v1alpha1.DestinationLoki}
	for name, tc := range map[string]struct {
		arrivals  []arrival
		expected  int64
		timeout   time.Duration
		wantCount int64
		wantEnd   v1alpha1.DrainEnd
		wantDrain time.Duration
	}{
		// Queries start every 300 ms: the one at 600 ms finds every record.
		"reaches expected": {[]arrival{{0, "10"}, {300 * time.Millisecond, "60"}, {600 * time.Millisecond, "100"}}, 100, time.Minute,
			100, v1alpha1.DrainComplete, 700 * time.Millisecond},
		// Stops rising at 70 until a retry 5 s later brings the rest: a drain ending 2 s
		// after the last rise would report 30 of them as dropped.
		"stops rising until a retry": {[]arrival{{0, "10"}, {300 * time.Millisecond, "70"}, {5300 * time.Millisecond, "100"}}, 100, time.Minute,
			100, v1alpha1.DrainComplete, 5500 * time.Millisecond},
		// Stops rising at 70 for good: the drain ends a quiet period after the query that
		// found 70 returned.
		"stops rising": {[]arrival{{0, "10"}, {300 * time.Millisecond, "70"}}, 100, time.Minute,
			70, v1alpha1.DrainQuiet, 400 * time.Millisecond},
		// Keeps rising past the timeout: bounded by it.
		"times out": {[]arrival{{0, "1"}, {300 * time.Millisecond, "2"}, {600 * time.Millisecond, "3"}, {900 * time.Millisecond, "4"}, {1200 * time.Millisecond, "5"}}, 100, time.Second,
			4, v1alpha1.DrainTimeout, time.Second},
		"all there at once": {[]arrival{{0, "100"}}, 100, time.Minute, 100, v1alpha1.DrainComplete, 100 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			clock := benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
			ended := clock.Now()
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				count := "0"
				for _, a := range tc.arrivals {
					if !clock.Now().Before(ended.Add(a.after)) {
						count = a.count
					}
				}
				clock.Spend(100 * time.Millisecond)
				fmt.Fprint(w, countAnswer(count))
			}))
			defer server.Close()
			counter := RunCounter{
				Client:   &LokiClient{URL: server.URL},
				Selector: "{}",
				Tag:      "t",
				Started:  ended.Add(-time.Minute),
				Clock:    clock,
			}
			wait := bench.Wait{Ended: ended, Deadline: ended.Add(tc.timeout), Quiet: bench.QuietPeriod(loki)}
			drained, err := bench.Drain(context.Background(), counter, records.Expectation{Records: tc.expected}, wait, clock)
			if drain := drained.LastArrival.Sub(ended); err != nil || drained.Delivered != tc.wantCount ||
				drained.End != tc.wantEnd ||
				drain != tc.wantDrain {
				t.Fatalf(
					"count %d, %s, drain %s, %v; want %d, %s after %s",
					drained.Delivered,
					drained.End,
					drain,
					err,
					tc.wantCount,
					tc.wantEnd,
					tc.wantDrain,
				)
			}
		})
	}
}

func FuzzParseCountResponse(f *testing.F) {
	f.Add(countAnswer("42"))
	f.Add(`{"status":"success","data":{"resultType":"vector","result":[]}}`)
	f.Add(countAnswer("1e3"))
	f.Fuzz(func(t *testing.T, body string) {
		if n, err := parseCountResponse([]byte(body)); err == nil && n < 0 {
			t.Fatalf("count %d from %q", n, body)
		}
	})
}

// TestRequestsFollowNoRedirect: a Loki or a shipper that answers with a redirect fails
// the request, for good and without echoing where it points, and the host it names never
// receives the request, its tenant or its credentials.
func TestRequestsFollowNoRedirect(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		fmt.Fprint(w, countAnswer("1"))
	}))
	defer elsewhere.Close()
	target := elsewhere.URL + "/collect?token=echoed"
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target, status)
		}))
		client := &LokiClient{URL: redirecting.URL, TenantID: "bench", Username: "u", Password: "secret-password"}
		_, countErr := client.CountRecords(context.Background(), `{job="logbench"}`, "lb_x", time.Now(), time.Now())
		_, metricsErr := client.Metrics(context.Background())
		_, scrapeErr := ShipperScraper{URL: redirecting.URL + "/api/v1/metrics/prometheus", Kind: v1alpha1.ShipperFluentBit}.
			Read(context.Background())
		redirecting.Close()
		var unavailable *bench.UnavailableError
		for what, err := range map[string]error{"count": countErr, "Loki's metrics": metricsErr, "scrape": scrapeErr} {
			if err == nil || !strings.Contains(err.Error(), "a redirect, which logbench does not follow") ||
				errors.As(err, &unavailable) || strings.Contains(err.Error(), "echoed") {
				t.Errorf("%s answered %d: error %v, want a refused redirect, final, without its target", what, status, err)
			}
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the host the redirects named received %d requests, want none", n)
	}
}
