package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
)

// TestContainerLogAccount: records missing from the stream of a run during which the
// kubelet rotated the log (the newest file holds fewer of them than the stream
// delivered) are unverified, never dropped; a stream that read fewer of them than the
// newest file holds skipped lines, so the file's count is delivered and the rest
// unverified; csvlog records are checked against
// CloudNativePG's sampler, which names a loss it explains; a shortfall with neither is
// dropped and says the container log lacks them.
func TestContainerLogAccount(t *testing.T) {
	const tag = "lb_stdout_c1_r1_abc"
	for _, tc := range []struct {
		name                string
		delivered, inNewest int64
		sampled             bool
		// rotatedSinceOpened: the newest file began after the stream opened.
		rotatedSinceOpened bool
		// wantDelivered is the row's delivered count when not the stream's.
		wantDelivered  int64
		wantDropped    int64
		wantUnverified int64
		wantReason     string
		wantVerdict    v1alpha1.SamplerVerdict
	}{
		{name: "every record delivered", delivered: 1000, inNewest: 400},
		{name: "records missing after a rotation are unverified", delivered: 990, inNewest: 400, wantUnverified: 10},
		{name: "records missing without a rotation", delivered: 990, inNewest: 990, wantDropped: 10,
			wantReason: containerLogShortfall},
		// 1,000 records logged within one second: the sampler lets 100 + 9 through.
		{name: "csvlog records sampled", delivered: 109, inNewest: 109, sampled: true, wantDropped: 891,
			wantReason: "the loss matches CloudNativePG's log sampler", wantVerdict: v1alpha1.SamplerMatches},
		{name: "csvlog records lost besides the sampler", delivered: 50, inNewest: 50, sampled: true,
			wantDropped: 950, wantReason: "the loss exceeds CloudNativePG's log sampler",
			wantVerdict: v1alpha1.SamplerExceeds},
		{name: "csvlog records sampled, and a rotation", delivered: 109, inNewest: 10, sampled: true,
			wantUnverified: 891, wantVerdict: v1alpha1.SamplerUnknown},
		{name: "the stream skipped records the newest file holds", delivered: 0, inNewest: 700,
			wantDelivered: 700, wantUnverified: 300},
		{name: "csvlog records the stream skipped, all in the newest file", delivered: 50, inNewest: 1000,
			sampled: true, wantDelivered: 1000, wantVerdict: v1alpha1.SamplerUnknown},
		{name: "a stream stalled at a rotation before the run's first record", rotatedSinceOpened: true,
			wantUnverified: 1000},
		{name: "no record of the run anywhere, and no rotation", wantDropped: 1000, wantReason: containerLogShortfall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := *containerLogHolding(t, tag, tc.delivered, tc.inNewest, tc.sampled)
			if tc.rotatedSinceOpened {
				run.newestFileBegan = func(context.Context) (time.Time, error) { return run.opened.Add(time.Second), nil }
			}
			got, err := run.Account(context.Background(), records.Expectation{Records: 1000}, tc.delivered)
			if err != nil {
				t.Fatal(err)
			}
			if want := cmp.Or(tc.wantDelivered, tc.delivered); got.Delivered != want {
				t.Errorf("delivered %d, want %d", got.Delivered, want)
			}
			if got.Dropped == nil || *got.Dropped != tc.wantDropped || got.Unverified != tc.wantUnverified {
				t.Errorf("dropped %v, unverified %d; want %d and %d", got.Dropped, got.Unverified, tc.wantDropped,
					tc.wantUnverified)
			}
			if !strings.HasPrefix(got.DropReason, tc.wantReason) || (tc.wantReason == "") != (got.DropReason == "") {
				t.Errorf("drop reason %q, want %q", got.DropReason, tc.wantReason)
			}
			if tc.wantUnverified > 0 && !strings.Contains(got.UnverifiedReason, "rotated the container log") {
				t.Errorf("unverified reason %q names no rotation", got.UnverifiedReason)
			}
			if verdict := samplerVerdictOf(got); verdict != tc.wantVerdict {
				t.Errorf("sampler verdict %q, want %q", verdict, tc.wantVerdict)
			}
		})
	}
}

func samplerVerdictOf(r v1alpha1.Records) v1alpha1.SamplerVerdict {
	if r.Sampler == nil {
		return ""
	}
	return r.Sampler.Verdict
}

// TestFirstLineTime: the kubelet's time before the newest log file's first line tells
// when the file began; an empty file began after any run.
func TestFirstLineTime(t *testing.T) {
	for _, tc := range []struct {
		log     string
		want    time.Time
		wantErr bool
	}{
		{log: "2026-11-29T16:16:07.310878969Z {\"level\":\"info\"}\n2026-11-29T16:16:08Z x\n",
			want: time.Date(2026, 11, 29, 16, 16, 7, 310878969, time.UTC)},
		{log: ""},
		{log: "{\"level\":\"info\"}\n", wantErr: true},
	} {
		got, err := firstLineTime([]byte(tc.log))
		if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
			t.Errorf("firstLineTime(%q) = %v, %v; want %v, error %t", tc.log, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestContainerLogSamplerOnlyForStdout: a Stdout csvlog row is judged against
// CloudNativePG's sampler; the baseline, read in the same container log only to show
// that it logged nothing, is not.
func TestContainerLogSamplerOnlyForStdout(t *testing.T) {
	primary := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bench-1", Namespace: "bench",
		Labels: map[string]string{"cnpg.io/cluster": "bench", "cnpg.io/instanceRole": "primary"}}}
	for _, tc := range []struct {
		destination v1alpha1.Destination
		sampled     bool
	}{
		{destination: v1alpha1.Destination{Name: "stdout", Type: v1alpha1.DestinationStdout}, sampled: true},
		{destination: v1alpha1.Destination{Name: "baseline", Type: v1alpha1.DestinationNone}},
	} {
		req := Request{Namespace: "bench", ClusterName: "bench", Destination: tc.destination}
		run, closeLog, err := newContainerLogRun(context.Background(), fake.NewClientset(primary), req,
			records.FormatCSVLog, "lb_tag", nil)
		if err != nil {
			t.Fatal(err)
		}
		closeLog()
		if got := run.sampler != nil; got != tc.sampled {
			t.Errorf("%s: sampler windows kept %t, want %t", tc.destination.Type, got, tc.sampled)
		}
		// Only a sampled run opens a session to log the markers that end its drain.
		refused := errors.New("refused")
		_, closeLog, err = newContainerLogRun(context.Background(), fake.NewClientset(primary), req,
			records.FormatCSVLog, "lb_tag", func(context.Context) (*pgx.Conn, error) { return nil, refused })
		closeLog()
		if connected := errors.Is(err, refused); connected != tc.sampled {
			t.Errorf("%s: connected for markers %t, want %t (%v)", tc.destination.Type, connected, tc.sampled, err)
		}
	}
}

// TestOpenSamplerWindow: after a warm-up whose survivors the stream shows, the marker is
// logged once the stream has shown none for a tick, and opens a window whose start the
// windows can tell; another session's survivor logged within the tick but reaching the
// stream late spoils that attempt, and the next one is made after a quiet tick again.
func TestOpenSamplerWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		// late is another session's survivor, logged this long before the first marker,
		// reaching the stream just before it; none if zero.
		late     time.Duration
		attempts int
	}{
		{name: "a quiet server", attempts: 1},
		{name: "another session's record reaching the stream late", late: 500 * time.Millisecond, attempts: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The stream opens a second back, inside the warm-up's logging.
			opened := time.Now()
			windows := records.NewSamplerWindows("lb_tag", opened.Add(-time.Second))
			for back := 900 * time.Millisecond; back >= 0; back -= 300 * time.Millisecond {
				logSurvivor(windows, opened.Add(-back), "lb_warmup_tag")
			}
			if windows.Placed() {
				t.Fatal("a window start told inside the warm-up")
			}
			var marks []time.Time
			mark := func(_ context.Context, id string) error {
				marks = append(marks, time.Now())
				if len(marks) == 1 && tc.late > 0 {
					logSurvivor(windows, marks[0].Add(-tc.late), "other")
				}
				logSurvivor(windows, time.Now(), "")
				return nil
			}
			started := time.Now()
			if err := openSamplerWindow(context.Background(), windows, mark); err != nil {
				t.Fatal(err)
			}
			if !windows.Placed() {
				t.Fatalf("no window start told after %d markers", len(marks))
			}
			if len(marks) != tc.attempts {
				t.Errorf("%d markers, want %d", len(marks), tc.attempts)
			}
			if waited := marks[0].Sub(started); waited < time.Second {
				t.Errorf("the first marker came %s after the warm-up's last survivor, within a tick", waited)
			}
		})
	}
}

// TestOpenSamplerWindowGivesUp: on a server where another session's records keep passing,
// no tick is quiet; the run goes on after samplerWindowTimeout, its windows untold.
func TestOpenSamplerWindowGivesUp(t *testing.T) {
	opened := time.Now()
	windows := records.NewSamplerWindows("lb_tag", opened.Add(-time.Second))
	for back := 800 * time.Millisecond; back >= 0; back -= 200 * time.Millisecond {
		logSurvivor(windows, opened.Add(-back), "other")
	}
	ctx := t.Context()
	go func() {
		ticker := time.NewTicker(200 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case at := <-ticker.C:
				logSurvivor(windows, at, "other")
			}
		}
	}()
	started := time.Now()
	marked := 0
	err := openSamplerWindow(context.Background(), windows, func(context.Context, string) error { marked++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(started); took > samplerWindowTimeout+time.Second {
		t.Errorf("gave up after %s, beyond %s", took, samplerWindowTimeout)
	}
	if marked > 0 || windows.Placed() {
		t.Errorf("%d markers logged, window start told %t, on a server never quiet for a tick", marked, windows.Placed())
	}
}

// logSurvivor writes to windows the line CloudNativePG prints for a record of
// application that passed its sampler at at.
func logSurvivor(windows *records.SamplerWindows, at time.Time, application string) {
	_, _ = fmt.Fprintf(windows, `{"level":"info","ts":%q,"logger":"postgres","msg":"record",`+
		`"record":{"application_name":%q}}`+"\n", at.UTC().Format(time.RFC3339Nano), application)
}
