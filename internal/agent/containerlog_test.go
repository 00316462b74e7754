package agent

import (
	"context"
	"testing"

	"github.com/logbench/logbench/internal/records"
)

// TestContainerLogShortfallReasons: records missing from the stream of a run during which
// the kubelet rotated the log (the newest file holds fewer of them than the stream
// delivered) are reported with that reason, csvlog records with CloudNativePG's sampling;
// a shortfall with neither has no reason.
func TestContainerLogShortfallReasons(t *testing.T) {
	for _, tc := range []struct {
		name                string
		delivered, inNewest int64
		sampled             bool
		wantDropped         int64
		wantReason          string
	}{
		{name: "every record delivered", delivered: 1000, inNewest: 400, wantDropped: 0},
		{name: "records missing after a rotation", delivered: 990, inNewest: 400, wantDropped: 10,
			wantReason: rotationDropReason},
		{name: "records missing without a rotation", delivered: 990, inNewest: 990, wantDropped: 10},
		{name: "csvlog records sampled", delivered: 300, inNewest: 300, sampled: true, wantDropped: 700,
			wantReason: samplingDropReason},
		{name: "csvlog records sampled, and a rotation", delivered: 300, inNewest: 100, sampled: true, wantDropped: 700,
			wantReason: samplingDropReason + "; " + rotationDropReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := containerLogRun{
				inNewestFile: func(context.Context) (int64, error) { return tc.inNewest, nil },
				sampled:      tc.sampled,
			}
			got, err := run.Account(context.Background(), records.Expectation{Records: 1000}, tc.delivered)
			if err != nil {
				t.Fatal(err)
			}
			if got.Dropped == nil || *got.Dropped != tc.wantDropped {
				t.Errorf("dropped %v, want %d", got.Dropped, tc.wantDropped)
			}
			if got.DropReason != tc.wantReason {
				t.Errorf("drop reason %q, want %q", got.DropReason, tc.wantReason)
			}
		})
	}
}
