package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/shipping"
)

// lokiRun counts one run's records in Loki and remembers what went wrong with Loki
// meanwhile: its failures to answer, a count below an earlier one, and, when Loki serves
// its metrics at its URL, its restarts and refusals. They explain drops.
type lokiRun struct {
	counter shipping.RunCounter
	// before is Loki's metrics page when the run started; nil when Loki does not serve
	// it at its URL, and its refusals and restarts then give no reason.
	before *shipping.LokiMetrics
	// trouble is what went wrong with Loki so far; mostCounted is its highest count of
	// the run's records.
	trouble     shipping.LokiTrouble
	mostCounted int64
}

// startLokiRun starts counting the records tagged tag among the streams of selector,
// reading Loki's refusals so far.
func startLokiRun(ctx context.Context, client *shipping.LokiClient, selector, tag string, clock bench.Clock) *lokiRun {
	run := &lokiRun{counter: shipping.RunCounter{
		Client: client, Selector: selector, Tag: tag, Started: clock.Now(), Clock: clock,
	}}
	if metrics, err := client.Metrics(ctx); err == nil {
		run.before = &metrics
	}
	return run
}

// Delivered is Loki's count of the run's records now.
func (r *lokiRun) Delivered(ctx context.Context) (int64, error) {
	count, err := r.counter.Delivered(ctx)
	var unavailable *bench.UnavailableError
	switch {
	case errors.As(err, &unavailable):
		r.trouble.Unanswered++
		r.trouble.LastError = err.Error()
	case err == nil:
		r.mostCounted = max(r.mostCounted, count)
	}
	return count, err
}

// since returns what Loki refused of the tenant's records since the run started, by
// reason (nil when unknown), and its trouble given the drain's final count.
func (r *lokiRun) since(ctx context.Context, delivered int64) (map[string]int64, shipping.LokiTrouble) {
	trouble := r.trouble
	trouble.CountFell = r.mostCounted - delivered
	if r.before == nil {
		return nil, trouble
	}
	after, err := r.counter.Client.Metrics(ctx)
	if err != nil {
		return nil, trouble
	}
	// A restarted Loki's refusals of the run are unknown.
	if trouble.Restarted = after.RestartedSince(*r.before); trouble.Restarted {
		return nil, trouble
	}
	return increase(after.Discards, r.before.Discards), trouble
}

// increase returns how much each counter of a Loki that did not restart rose.
func increase(after, before map[string]int64) map[string]int64 {
	rose := map[string]int64{}
	for reason, n := range after {
		rose[reason] = n - before[reason]
	}
	return rose
}

// duplicates counts the copies beyond the first of the run's records Loki holds, by
// reading its stored lines back and the identity parse finds in each. stored is Loki's
// count of the run's records: a read finding another number of lines is no count of the
// same records, and a run of more than shipping.MaxIdentityLines is not read.
func (r *lokiRun) duplicates(ctx context.Context, parse shipping.IdentityParser, stored int64) (int64, error) {
	if stored > shipping.MaxIdentityLines {
		return 0, fmt.Errorf("loki holds %d records of the run, more than the %d logbench reads back to count "+
			"them by identity", stored, shipping.MaxIdentityLines)
	}
	c := r.counter
	read, err := c.Client.ReadIdentities(ctx, c.Selector, c.Tag, c.Started, c.Clock.Now(), parse,
		shipping.MaxIdentityLines)
	if err != nil {
		return 0, fmt.Errorf("reading the run's records back from loki to count them by identity: %w", err)
	}
	if read.Lines != stored {
		return 0, fmt.Errorf("loki held %d records of the run when read back to count them by identity, %d when "+
			"counted", read.Lines, stored)
	}
	return stored - read.Distinct, nil
}
