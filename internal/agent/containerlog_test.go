package agent

import (
	"context"
	"testing"

	"github.com/logbench/logbench/internal/records"
)

// TestContainerLogShortfallAfterRotation: records missing from the stream of a run during
// which the kubelet rotated the log (the newest file holds fewer of them than the stream
// delivered) are reported with that reason; a shortfall without a rotation has none.
func TestContainerLogShortfallAfterRotation(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		delivered, inNewest    int64
		wantDropped            int64
		wantRotationDropReason bool
	}{
		{name: "every record delivered", delivered: 1000, inNewest: 400, wantDropped: 0},
		{name: "records missing after a rotation", delivered: 990, inNewest: 400, wantDropped: 10,
			wantRotationDropReason: true},
		{name: "records missing without a rotation", delivered: 990, inNewest: 990, wantDropped: 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := containerLogRun{inNewestFile: func(context.Context) (int64, error) { return tc.inNewest, nil }}
			got, err := run.Account(context.Background(), records.Expectation{Records: 1000}, tc.delivered)
			if err != nil {
				t.Fatal(err)
			}
			if got.Dropped == nil || *got.Dropped != tc.wantDropped {
				t.Errorf("dropped %v, want %d", got.Dropped, tc.wantDropped)
			}
			if (got.DropReason == rotationDropReason) != tc.wantRotationDropReason {
				t.Errorf("drop reason %q", got.DropReason)
			}
		})
	}
}
