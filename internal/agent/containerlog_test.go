package agent

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"testing"

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
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := *containerLogHolding(t, tag, tc.delivered, tc.inNewest, tc.sampled)
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
