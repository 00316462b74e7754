package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/shipping"
)

// TestRsyslogRunAccount: what rsyslog did not write is dropped at the read stage, with
// its rate limit as the reason; a row it wrote whole loses nothing.
func TestRsyslogRunAccount(t *testing.T) {
	limited := v1alpha1.Destination{Type: v1alpha1.DestinationSyslog, Syslog: &v1alpha1.SyslogSpec{
		Receiver: v1alpha1.SyslogRsyslog, RateLimit: &v1alpha1.SyslogRateLimit{IntervalSeconds: 5, Burst: 200},
	}}
	run := &rsyslogRun{reason: shipping.RsyslogReason(limited)}
	for _, tt := range []struct {
		delivered, wantDropped int64
		wantLostAt, wantReason string
	}{
		{delivered: 200, wantDropped: 800, wantLostAt: "read", wantReason: "SysSock.RateLimit"},
		{delivered: 1000, wantDropped: 0},
	} {
		got, err := run.Account(context.Background(), records.Expectation{Records: 1000}, tt.delivered)
		if err != nil {
			t.Fatal(err)
		}
		if got.Dropped == nil || *got.Dropped != tt.wantDropped || got.Stages == nil ||
			*got.Stages.Read != tt.delivered || got.Stages.LostAt != tt.wantLostAt ||
			!strings.Contains(got.DropReason, tt.wantReason) || (tt.wantReason == "") != (got.DropReason == "") {
			t.Errorf("%d of 1000 written: %+v, stages %+v; want %d dropped at %q for %q",
				tt.delivered, got, got.Stages, tt.wantDropped, tt.wantLostAt, tt.wantReason)
		}
	}
}
