package agent

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/bench/benchtest"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/shipping"
)

// fakeFluentBit serves Fluent Bit's metrics page. Every scrape moves the output's sent
// counter on by step until it reaches limit, as a shipper does while it sends a run.
type fakeFluentBit struct {
	mu                sync.Mutex
	sent, step, limit int64
	dropped, retried  int64
	// held records were read and wait for a retry until heldUntil on clock.
	held      int64
	heldUntil time.Time
	clock     bench.Clock
	server    *httptest.Server
}

func newFakeFluentBit(t *testing.T, sent int64) *fakeFluentBit {
	f := &fakeFluentBit{sent: sent, limit: sent}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.held > 0 && !f.clock.Now().Before(f.heldUntil) {
			f.limit, f.step, f.held = f.limit+f.held, f.held, 0
		}
		f.sent = min(f.sent+f.step, f.limit)
		// The input has read every record the output will send or drop.
		fmt.Fprintf(w, `# TYPE fluentbit_input_records_total counter
fluentbit_input_records_total{name="postgresql"} %d
# TYPE fluentbit_output_proc_records_total counter
fluentbit_output_proc_records_total{name="shipped"} %d
# TYPE fluentbit_output_dropped_records_total counter
fluentbit_output_dropped_records_total{name="shipped"} %d
# TYPE fluentbit_output_retried_records_total counter
fluentbit_output_retried_records_total{name="shipped"} %d
`, f.limit+f.dropped+f.held, f.sent, f.dropped, f.retried)
	}))
	t.Cleanup(f.server.Close)
	return f
}

// send makes the next scrapes show n more records sent, step at a time.
func (f *fakeFluentBit) send(n, step int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limit, f.step = f.sent+n, step
}

// hold makes n more records read but not sent until the retry at until on clock.
func (f *fakeFluentBit) hold(n int64, clock bench.Clock, until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held, f.clock, f.heldUntil = n, clock, until
}

func (f *fakeFluentBit) drop(dropped, retried int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped, f.retried = f.dropped+dropped, f.retried+retried
}

func (f *fakeFluentBit) scraper() shipping.ShipperScraper {
	return shipping.ShipperScraper{URL: f.server.URL, Kind: v1alpha1.ShipperFluentBit}
}

// drainAndAccount runs the end of a run as bench.Run does: the drain, then the account.
func drainAndAccount(t *testing.T, run *shippedRun, expected int64, clock bench.Clock) v1alpha1.Records {
	t.Helper()
	want := records.Expectation{Records: expected}
	ended := clock.Now()
	wait := bench.Wait{Ended: ended, Deadline: ended.Add(time.Minute), Quiet: bench.ShippedQuiet}
	drained, err := bench.Drain(context.Background(), run, want, wait, clock)
	if err != nil {
		t.Fatal(err)
	}
	accounted, err := run.Account(context.Background(), want, drained.Delivered)
	if err != nil {
		t.Fatal(err)
	}
	return accounted
}

func newClock() *benchtest.SteppingClock {
	return benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
}

func TestShippedRunCountsTheIncreaseOfTheSidecarsSentRecords(t *testing.T) {
	fluentBit := newFakeFluentBit(t, 400)
	// An earlier attempt's last records are still being sent when the run starts: they
	// must not count as the run's.
	fluentBit.send(100, 50)
	clock := newClock()
	run, err := startShippedRun(context.Background(), fluentBit.scraper(), nil, "", "tag", time.Minute, clock)
	if err != nil {
		t.Fatal(err)
	}
	if run.before.Total().Sent != 500 {
		t.Errorf(
			"baseline %d sent records, want 500: the earlier attempt's records had not all arrived",
			run.before.Total().Sent,
		)
	}

	fluentBit.send(2000, 300)
	got := drainAndAccount(t, run, 2000, clock)
	if got.Delivered != 2000 || got.Dropped == nil || *got.Dropped != 0 || got.DropReason != "" {
		t.Errorf("records %+v, want all 2000 delivered and no drop", got)
	}
}

// TestShippedRunWaitsForRecordsHeldForARetry: records the shipper read and holds for a
// retry later than the quiet period (the collector's backoff grows to 30 s) are waited
// for, not reported dropped.
func TestShippedRunWaitsForRecordsHeldForARetry(t *testing.T) {
	fluentBit := newFakeFluentBit(t, 0)
	clock := newClock()
	run, err := startShippedRun(context.Background(), fluentBit.scraper(), nil, "", "tag", time.Minute, clock)
	if err != nil {
		t.Fatal(err)
	}
	fluentBit.send(1700, 1700)
	fluentBit.hold(300, clock, clock.Now().Add(25*time.Second))
	got := drainAndAccount(t, run, 2000, clock)
	if got.Delivered != 2000 || got.Dropped == nil || *got.Dropped != 0 {
		t.Errorf("records %+v, want all 2000 delivered after the retry", got)
	}

	// Held past the drain's deadline (a minute), they are missing, and the row says
	// where they were.
	run, err = startShippedRun(context.Background(), fluentBit.scraper(), nil, "", "tag", time.Minute, clock)
	if err != nil {
		t.Fatal(err)
	}
	fluentBit.send(1700, 1700)
	fluentBit.hold(300, clock, clock.Now().Add(2*time.Minute))
	got = drainAndAccount(t, run, 2000, clock)
	if got.Delivered != 1700 || !strings.Contains(got.DropReason, "300 records were still in the shipper") {
		t.Errorf("records %+v, want 1700 delivered and the 300 held named", got)
	}
}

func TestShippedRunExplainsTheSidecarsDrops(t *testing.T) {
	fluentBit := newFakeFluentBit(t, 0)
	clock := newClock()
	run := startRunOfFile(t, fluentBit, clock, 2000)
	fluentBit.send(1500, 500)
	fluentBit.drop(500, 700)
	got := drainAndAccount(t, run, 2000, clock)
	want := "the shipper dropped 500 records (errors or retries exhausted); 700 records needed retries"
	if got.Delivered != 1500 || got.Dropped == nil || *got.Dropped != 500 || got.DropReason != want {
		t.Errorf("records %+v, want 1500 delivered, 500 dropped: %s", got, want)
	}
	wantStages := v1alpha1.RecordStages{Written: new(int64(2000)), Read: new(int64(2000)), Sent: new(int64(1500)), LostAt: "sent"}
	if got.Stages == nil || !reflect.DeepEqual(*got.Stages, wantStages) {
		t.Errorf("stages %+v, want %+v", got.Stages, wantStages)
	}
}

// TestShippedRunDrainEndsOnceNothingIsInFlight: records the file holds and the shipper
// has not read are in flight; once it has read them and sent or dropped every one, the
// drain ends with the next count, with no quiet period.
func TestShippedRunDrainEndsOnceNothingIsInFlight(t *testing.T) {
	fluentBit := newFakeFluentBit(t, 0)
	clock := newClock()
	run := startRunOfFile(t, fluentBit, clock, 2000)
	fluentBit.send(1000, 1000)
	if pending, err := run.InFlight(context.Background()); err != nil || pending != 1000 {
		t.Errorf("in flight %d (%v), want the 1000 records not read yet", pending, err)
	}

	fluentBit.send(500, 500)
	fluentBit.drop(500, 0)
	ended := clock.Now()
	wait := bench.Wait{Ended: ended, Deadline: ended.Add(time.Minute), Quiet: bench.ShippedQuiet}
	drained, err := bench.Drain(context.Background(), run, records.Expectation{Records: 2000}, wait, clock)
	if err != nil {
		t.Fatal(err)
	}
	if took := clock.Now().Sub(ended); drained.Delivered != 1500 || drained.End != v1alpha1.DrainSettled || took >= time.Second {
		t.Errorf("drain counted %d, ended %s after %s; want 1500, settled within a second", drained.Delivered, drained.End, took)
	}
}

// startRunOfFile starts a run of the sidecar whose file holds written records of it.
func startRunOfFile(t *testing.T, fluentBit *fakeFluentBit, clock bench.Clock, written int64) *shippedRun {
	t.Helper()
	run, err := startShippedRun(context.Background(), fluentBit.scraper(), nil, "", "tag", time.Minute, clock)
	if err != nil {
		t.Fatal(err)
	}
	run.written = writtenRecords(written)
	return run
}

// writtenRecords is a file holding a fixed number of the run's records.
type writtenRecords int64

func (w writtenRecords) Delivered(context.Context) (int64, error) { return int64(w), nil }

// fakeLoki answers count queries with a count that rises by step per query up to
// limit, and serves its refusals on /metrics unless metrics is false.
type fakeLoki struct {
	mu                 sync.Mutex
	count, step, limit int64
	rateLimited        int64
	metrics            bool
	started            int64
	// unanswered is how many of the next count queries get 503, as from a Loki starting.
	unanswered int
	queries    []string
	// lines answer log queries, one entry each, when set; 429 otherwise.
	lines               []string
	server              *httptest.Server
	unauthorisedQueries int
}

func newFakeLoki(t *testing.T, metrics bool) *fakeLoki {
	l := &fakeLoki{metrics: metrics}
	l.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if user, password, _ := r.BasicAuth(); user != "bench" || password != "secret" ||
			r.Header.Get("X-Scope-OrgID") != "team" {
			l.unauthorisedQueries++
		}
		switch {
		case r.URL.Path == "/loki/api/v1/query" && l.unanswered > 0:
			l.unanswered--
			http.Error(w, "Ingester not ready", http.StatusServiceUnavailable)
		case r.URL.Path == "/loki/api/v1/query":
			l.queries = append(l.queries, r.URL.Query().Get("query"))
			l.count = min(l.count+l.step, l.limit)
			fmt.Fprintf(
				w,
				`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1767322800,"%d"]}]}}`,
				l.count,
			)
		case r.URL.Path == "/loki/api/v1/query_range" && l.lines != nil:
			var values []string
			start, _ := strconv.ParseInt(r.URL.Query().Get("start"), 10, 64)
			for i, line := range l.lines {
				if at := int64(1767322800000000000 + i); at >= start {
					values = append(values, fmt.Sprintf(`["%d",%q]`, at, line))
				}
			}
			fmt.Fprintf(w, `{"status":"success","data":{"resultType":"streams","result":[`+
				`{"stream":{"job":"logbench"},"values":[%s]}]}}`, strings.Join(values, ","))
		case r.URL.Path == "/loki/api/v1/query_range":
			http.Error(w, "too many outstanding requests", http.StatusTooManyRequests)
		case r.URL.Path == "/metrics" && l.metrics:
			fmt.Fprintf(w, "loki_discarded_samples_total{reason=\"rate_limited\",tenant=\"team\"} %d\n", l.rateLimited)
			fmt.Fprintf(w, "process_start_time_seconds %d\n", l.started)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(l.server.Close)
	return l
}

func (l *fakeLoki) client() *shipping.LokiClient {
	return &shipping.LokiClient{URL: l.server.URL, TenantID: "team", Username: "bench", Password: "secret"}
}

// receive makes the next count queries find n records, step at a time, and Loki's
// metrics show refused more refusals.
func (l *fakeLoki) receive(n, step, refused int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limit, l.step = n, step
	l.rateLimited += refused
}

// restart makes Loki a new process that kept kept of the run's records, does not
// answer the next unanswered counts and has refused nothing yet.
func (l *fakeLoki) restart(kept int64, unanswered int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started++
	l.count, l.limit, l.rateLimited, l.unanswered = kept, kept, 0, unanswered
}

// TestShippedRunExplainsDropsByALokiRestart: Loki restarts during the run, losing the
// records it had stored, and answers no count while it starts; the drain waits for it
// and the drop is explained by the restart, the fallen count and the unanswered counts.
func TestShippedRunExplainsDropsByALokiRestart(t *testing.T) {
	fluentBit := newFakeFluentBit(t, 0)
	loki := newFakeLoki(t, true)
	loki.receive(0, 0, 5)
	clock := newClock()
	run, err := startShippedRun(context.Background(), fluentBit.scraper(), loki.client(),
		`{job="logbench"}`, "lb_loki_c1_r1_abc", time.Minute, clock)
	if err != nil {
		t.Fatal(err)
	}
	fluentBit.send(2000, 2000)
	fluentBit.drop(500, 500)
	loki.receive(1500, 1500, 0)
	if count, err := run.Delivered(context.Background()); err != nil || count != 1500 {
		t.Fatalf("count before the restart %d, %v; want 1500", count, err)
	}
	loki.restart(1200, 3)
	got := drainAndAccount(t, run, 2500, clock)
	want := "loki restarted during the run: records it held in memory or on storage that did not survive the restart " +
		"are lost; loki's count of the run's records fell 300 below its highest: loki lost records it had stored; " +
		"loki did not answer 3 counts during the drain (last: loki answered 503 Service Unavailable); " +
		"the shipper dropped 500 records (errors or retries exhausted); 500 records needed retries"
	if got.Delivered != 1200 || got.Dropped == nil || *got.Dropped != 1300 || got.DropReason != want {
		t.Errorf("records %+v, want 1200 delivered, 1300 dropped: %s", got, want)
	}
}

func TestShippedRunCountsTheRunsRecordsInLokiAndExplainsItsRefusals(t *testing.T) {
	const selector = `{job="logbench", destination="loki"}`
	for name, tc := range map[string]struct {
		metrics bool
		reason  string
	}{
		"with Loki's metrics":    {true, "loki refused pushes of 300 samples, retries included (rate_limited 300); 300 records needed retries"},
		"without Loki's metrics": {false, "300 records needed retries"},
	} {
		t.Run(name, func(t *testing.T) {
			fluentBit := newFakeFluentBit(t, 0)
			loki := newFakeLoki(t, tc.metrics)
			loki.receive(0, 0, 25) // refusals of earlier runs
			clock := newClock()
			run, err := startShippedRun(
				context.Background(),
				fluentBit.scraper(),
				loki.client(),
				selector,
				"lb_loki_c1_r1_abc",
				time.Minute,
				clock,
			)
			if err != nil {
				t.Fatal(err)
			}

			fluentBit.send(2000, 1000)
			fluentBit.drop(0, 300)
			loki.receive(1700, 600, 300)
			got := drainAndAccount(t, run, 2000, clock)
			if got.Delivered != 1700 || got.Dropped == nil || *got.Dropped != 300 || got.DropReason != tc.reason {
				t.Errorf("records %+v, want 1700 delivered, 300 dropped: %s", got, tc.reason)
			}
			loki.mu.Lock()
			defer loki.mu.Unlock()
			if len(loki.queries) == 0 ||
				!strings.HasPrefix(loki.queries[0], "sum(count_over_time("+selector+` |= "lb_loki_c1_r1_abc" [`) {
				t.Errorf("queries %q, want counts of the run's tag among the destination's streams", loki.queries)
			}
			if loki.unauthorisedQueries > 0 {
				t.Errorf("%d requests to Loki without the tenant or the credentials", loki.unauthorisedQueries)
			}
		})
	}
}

// TestShippedRunCountsDuplicatesApartFromALoss: ten records never reach the shipper's
// input, and a retried push stores ten others twice, so Loki holds as many as the file.
// The ten duplicates are counted, and the ten lost are still reported, at the read stage:
// at least ten without the records' identity, or when Loki does not answer the read of
// them (the reason says why); exactly ten when the csvlog records read back from Loki
// count them by identity.
func TestShippedRunCountsDuplicatesApartFromALoss(t *testing.T) {
	stored := make([]string, 0, 1000)
	for line := range 1000 {
		if line >= 990 {
			line -= 500 // a retried push stored these again
		}
		stored = append(stored, fmt.Sprintf(`2026-01-02 03:00:00.000 UTC,"postgres","bench",1,"[local]",`+
			`6565a1b2.4d2,%d,"SELECT",,3/4,0,LOG,00000,"statement: SELECT 1, ""lb_loki_c1_r1_abc""",,,,,,,,,`+
			`"lb_loki_c1_r1_abc","client backend",,0`, line+1))
	}
	for name, tc := range map[string]struct {
		identity bool
		lines    []string
		exact    bool
		reason   string
	}{
		"without an identity": {reason: "10 records needed retries; 10 records in the file were not read by the shipper"},
		"loki does not answer the read": {identity: true, reason: "10 records needed retries; duplicates are a lower " +
			"bound: reading the run's records back from loki to count them by identity: loki answered 429 Too Many " +
			"Requests; 10 records in the file were not read by the shipper"},
		"read back by identity": {identity: true, lines: stored, exact: true,
			reason: "10 records needed retries; 10 records in the file were not read by the shipper"},
	} {
		t.Run(name, func(t *testing.T) {
			fluentBit := newFakeFluentBit(t, 0)
			loki := newFakeLoki(t, true)
			loki.lines = tc.lines
			clock := newClock()
			run, err := startShippedRun(context.Background(), fluentBit.scraper(), loki.client(), `{job="logbench"}`,
				"lb_loki_c1_r1_abc", time.Minute, clock)
			if err != nil {
				t.Fatal(err)
			}
			run.written = writtenRecords(1000)
			if tc.identity {
				run.identity, _ = shipping.IdentityOf(v1alpha1.Destination{Type: v1alpha1.DestinationLoki,
					Shipper: &v1alpha1.ShipperSpec{Format: v1alpha1.FormatCSVLog}})
			}
			fluentBit.send(990, 990)
			fluentBit.drop(0, 10)
			loki.receive(1000, 1000, 0)
			got := drainAndAccount(t, run, 1000, clock)
			if got.Duplicates != 10 || got.AccountingError != "" || got.DropReason != tc.reason || got.Stages == nil ||
				got.Stages.Duplicates != 10 || got.Stages.DuplicatesExact != tc.exact || got.Stages.LostAt != "read" {
				t.Fatalf("records %+v, stages %+v: want 10 duplicates (exact: %t), the loss at read and the reason %q",
					got, got.Stages, tc.exact, tc.reason)
			}
			dropped, unset := got.DroppedAtLeast, got.Dropped
			if tc.exact {
				dropped, unset = got.Dropped, got.DroppedAtLeast
			}
			if dropped == nil || *dropped != 10 || unset != nil {
				t.Errorf("records %+v: want 10 dropped (exactly: %t)", got, tc.exact)
			}
		})
	}
}

func TestNewShippedRunNeedsThePrimarysIP(t *testing.T) {
	primary := func(ip string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bench-fluent-1",
				Labels: map[string]string{"cnpg.io/cluster": "bench-fluent", "cnpg.io/instanceRole": "primary"}},
			Status: corev1.PodStatus{PodIP: ip},
		}
	}
	req := Request{Namespace: "ns", Benchmark: "bench", ClusterName: "bench-fluent",
		Destination: v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar}}
	for name, tc := range map[string]struct {
		pods []*corev1.Pod
		want string
	}{
		"no primary":       {nil, "cluster bench-fluent has no primary pod"},
		"a primary, no IP": {[]*corev1.Pod{primary("")}, "the primary pod bench-fluent-1 of bench-fluent has no IP yet"},
	} {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, pod := range tc.pods {
				if _, err := client.CoreV1().Pods("ns").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := newShippedRun(context.Background(), req, client, "tag", nil); err == nil || err.Error() != tc.want {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestPauseSamplerCountsThePausedReadings: only the readings with a paused input count,
// each for one sampling interval.
func TestPauseSamplerCountsThePausedReadings(t *testing.T) {
	for name, paused := range map[string]int{"paused": 1, "reading": 0} {
		t.Run(name, func(t *testing.T) {
			server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(
					w,
					"# TYPE fluentbit_input_ingestion_paused gauge\nfluentbit_input_ingestion_paused{name=\"postgresql\"} %d\n",
					paused,
				)
			}))
			defer server.Close()
			sampler := samplePauses(
				context.Background(),
				shipping.ShipperScraper{URL: server.URL, Kind: v1alpha1.ShipperFluentBit},
				10*time.Millisecond,
			)
			time.Sleep(200 * time.Millisecond)
			seconds := sampler.pausedSeconds()
			if paused == 1 && (seconds <= 0 || seconds > 0.2) {
				t.Errorf("paused for %v s of 0.2 s sampled", seconds)
			}
			if paused == 0 && seconds != 0 {
				t.Errorf("paused for %v s, never was", seconds)
			}
		})
	}
}

// TestShippedRunStartsAtOnceWhenNothingIsInFlight: a sidecar that has sent every record
// it read has nothing of an earlier run left to send, so the run does not wait for it to
// go quiet.
func TestShippedRunStartsAtOnceWhenNothingIsInFlight(t *testing.T) {
	fluentBit := newFakeFluentBit(t, 400)
	clock := newClock()
	started := clock.Now()
	run, err := startShippedRun(context.Background(), fluentBit.scraper(), nil, "", "tag", time.Minute, clock)
	if err != nil {
		t.Fatal(err)
	}
	if waited := clock.Now().Sub(started); waited != 0 {
		t.Errorf("waited %s with nothing in flight", waited)
	}
	if run.before.Total().Sent != 400 {
		t.Errorf("baseline %d sent records, want 400", run.before.Total().Sent)
	}
}

// TestShippedRunCountsAForwardedSyslogRunAtBothEnds counts a forwarding Syslog
// destination's run at the sidecar and at the receiver Service: the receiver's output
// delivers, and records the sidecar forwarded that the receiver never read are lost at
// the received stage, saying so; those the sidecar could not forward are its own drop.
func TestShippedRunCountsAForwardedSyslogRunAtBothEnds(t *testing.T) {
	for name, tc := range map[string]struct {
		forwarded, sidecarDropped, received int64
		lostAt, reason                      string
	}{
		"every record arrives": {forwarded: 2000, received: 2000},
		"datagrams lost on the way": {forwarded: 2000, received: 1700, lostAt: "received",
			reason: "300 of the 2000 records the sidecar forwarded over udp never reached the receiver's input"},
		"the sidecar cannot forward": {forwarded: 1800, sidecarDropped: 200, received: 1800, lostAt: "forwarded",
			reason: "the sidecar dropped 200 records it could not forward over udp (errors or retries exhausted)"},
	} {
		t.Run(name, func(t *testing.T) {
			sidecar, receiver := newFakeFluentBit(t, 0), newFakeFluentBit(t, 50)
			clock := newClock()
			run, err := startShippedRun(context.Background(), sidecar.scraper(), nil, "", "tag", time.Minute, clock)
			if err != nil {
				t.Fatal(err)
			}
			run.receiver = &syslogReceiverRun{scraper: receiver.scraper(), transport: v1alpha1.SyslogUDP}
			if run.receiver.before, err = receiver.scraper().Read(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The sidecar has forwarded everything by the time the receiver delivers.
			sidecar.send(tc.forwarded, tc.forwarded)
			sidecar.drop(tc.sidecarDropped, 0)
			receiver.send(tc.received, 400)
			got := drainAndAccount(t, run, 2000, clock)
			if got.Delivered != tc.received || got.Dropped == nil || *got.Dropped != 2000-tc.received {
				t.Errorf("records %+v, want %d delivered at the receiver", got, tc.received)
			}
			want := v1alpha1.RecordStages{Read: new(int64(2000)), Forwarded: new(tc.forwarded),
				Received: new(tc.received), Sent: new(tc.received), LostAt: tc.lostAt}
			if got.Stages == nil || !reflect.DeepEqual(*got.Stages, want) {
				t.Errorf("stages %+v, want %+v", got.Stages, want)
			}
			if got.DropReason != tc.reason {
				t.Errorf("drop reason %q, want %q", got.DropReason, tc.reason)
			}
		})
	}
}
