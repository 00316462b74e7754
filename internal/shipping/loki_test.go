package shipping

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
				if r.URL.Path != "/prefix/loki/api/v1/query" || query.Get("query") != want || query.Get("time") != fmt.Sprint(at.UnixNano()) {
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
		"text error":          {400, "parse error at line 1, col 5: syntax error\n", "loki answered 400 Bad Request: parse error at line 1, col 5: syntax error"},
		"JSON error":          {429, `{"message":"too many outstanding requests"}`, "loki answered 429 Too Many Requests: too many outstanding requests"},
		"matrix":              {200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`, `result type "matrix"`},
		"fractional count":    {200, countAnswer("1.5"), `loki counted "1.5" records`},
		"sample without time": {200, `{"status":"success","data":{"resultType":"vector","result":[{"value":["3"]}]}}`, "is not [time"},
		"not JSON":            {200, "<html>", "not a query result"},
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

// TestRunCounterDrains drains a RunCounter as the agent's bench.Run does.
func TestRunCounterDrains(t *testing.T) {
	for name, tc := range map[string]struct {
		counts    []string
		expected  int64
		timeout   time.Duration
		wantCount int64
		wantDrain time.Duration
	}{
		// Polls every 200ms: the third count reaches expected, 400ms after pgbench ended.
		"reaches expected": {[]string{"10", "60", "100"}, 100, time.Minute, 100, 400 * time.Millisecond},
		// Stops rising at 70 from the second poll: the drain ends 2s later, quiet.
		"stops rising": {[]string{"10", "70"}, 100, time.Minute, 70, 200 * time.Millisecond},
		// Keeps rising past the timeout: bounded by it.
		"times out":         {[]string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10"}, 100, time.Second, 6, time.Second},
		"all there at once": {[]string{"100"}, 100, time.Minute, 100, 0},
	} {
		t.Run(name, func(t *testing.T) {
			polls := 0
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, countAnswer(tc.counts[min(polls, len(tc.counts)-1)]))
				polls++
			}))
			defer server.Close()
			clock := &benchtest.SteppingClock{Time: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)}
			counter := RunCounter{Client: &LokiClient{URL: server.URL}, Selector: "{}", Tag: "t", Started: clock.Time.Add(-time.Minute), Clock: clock}
			ended := clock.Now()
			count, lastArrival, err := bench.Drain(context.Background(), counter, records.Expectation{Records: tc.expected}, ended, ended.Add(tc.timeout), clock)
			if drain := lastArrival.Sub(ended); err != nil || count != tc.wantCount || drain != tc.wantDrain {
				t.Fatalf("count %d, drain %s, %v; want %d after %s", count, drain, err, tc.wantCount, tc.wantDrain)
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
