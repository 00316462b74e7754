package agent

import (
	"context"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/destination"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/shipping"
)

// rsyslogRun counts a run's records in the file of the messages rsyslog kept, read
// through the server like the logging collector's files: what rsyslog read and did not
// write, its rate limiting's drops, is lost at its input, the read stage. The file's size
// is no measure of what the server logged, which a rate limit cuts: the row has no log
// volume.
type rsyslogRun struct {
	written *bench.FileDestination
	reason  string
}

// Delivered counts the run's records rsyslog wrote so far.
func (r *rsyslogRun) Delivered(ctx context.Context) (int64, error) {
	return r.written.Delivered(ctx)
}

// newRsyslogRun counts the records tagged tag in rsyslog's file of the destination.
func newRsyslogRun(ctx context.Context, req Request, route destination.Route, env Environment, tag string,
) (bench.Destination, func(), error) {
	written, closeFiles, err := throughServer(ctx, env, shipping.RsyslogDirectory,
		func(dir bench.LogDirectory, mark bench.LogMarker) (*bench.FileDestination, error) {
			return bench.NewSyslogFileDestination(ctx, dir, mark, route.SyslogSettings(), tag)
		})
	if err != nil {
		return nil, closeFiles, err
	}
	return &rsyslogRun{written: written, reason: shipping.RsyslogReason(req.Destination)}, closeFiles, nil
}

// Account names what rsyslog did not write as lost at the read stage.
func (r *rsyslogRun) Account(_ context.Context, want records.Expectation, delivered int64,
) (v1alpha1.Records, error) {
	stages := v1alpha1.RecordStages{Read: &delivered}
	stages.LostAt = stages.LosingStage(want.Exact())
	return shipping.Account(want, delivered, shipping.OutputCounters{}, nil, &stages, shipping.LokiTrouble{}, nil,
		r.reason), nil
}
