package agent

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/shipping"
)

// shippedRun counts the records of one run of a shipping destination: in Loki when the
// shipper sends them there, else as the increase of the sidecar's output counter since
// the run started. After the drain it explains drops with the shipper's counters of the
// run and, when Loki serves them at its URL, Loki's refusals.
type shippedRun struct {
	// written counts the run's records in the file the shipper reads.
	written bench.Destination
	shipper shipping.ShipperScraper
	// before are the shipper's counters when the run started.
	before shipping.ShipperMetrics
	// loki counts the run's records in Loki; nil when the shipper does not send there.
	loki *lokiRun
	// identity reads the identity of a record Loki holds, to count duplicates exactly;
	// nil when the records carry none.
	identity shipping.IdentityParser
	// pauses watches the shipper's input from the run's start; nil when nothing does.
	pauses *pauseSampler
	// unexplained is the reason of a drop that no counter explains.
	unexplained string
	// receiver counts the run at the receiver Service of a forwarding Syslog destination,
	// where its records are delivered; nil for other destinations.
	receiver *syslogReceiverRun
}

// syslogReceiverRun is the receiver Service of a forwarding Syslog destination: its
// counters when the run started, and the transport the sidecar forwards over.
type syslogReceiverRun struct {
	scraper   shipping.ShipperScraper
	before    shipping.ShipperMetrics
	transport v1alpha1.SyslogTransport
}

// newShippedRun finds the sidecar in the cluster's primary pod and starts counting a run
// tagged tag there.
func newShippedRun(
	ctx context.Context,
	req Request,
	client kubernetes.Interface,
	tag string,
	written bench.Destination,
) (*shippedRun, error) {
	pod, err := primaryPod(ctx, client, req.Namespace, req.ClusterName)
	if err != nil {
		return nil, err
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("the primary pod %s of %s has no IP yet", pod.Name, req.ClusterName)
	}
	target := req.shippingTarget()
	var loki *shipping.LokiClient
	if req.Destination.ShipsToLoki() {
		if req.Destination.Loki == nil {
			return nil, fmt.Errorf("destination %s ships to Loki but has no loki settings", req.Destination.Name)
		}
		loki = shipping.NewLokiClient(*req.Destination.Loki, os.Getenv)
	}
	run, err := startShippedRun(ctx, target.Scraper(pod.Status.PodIP, nil), loki, target.LokiSelector(), tag,
		req.DrainTimeout.Duration, bench.SystemClock)
	if err != nil {
		return nil, err
	}
	run.written = written
	if loki != nil {
		run.identity, _ = shipping.IdentityOf(req.Destination)
	}
	run.pauses = samplePauses(ctx, run.shipper, pauseSampling)
	if req.Destination.Type == v1alpha1.DestinationSyslog {
		run.unexplained = shipping.SyslogUnexplained
	}
	if shipping.ForwardsSyslog(req.Destination) {
		// The sidecar has forwarded what it held; the receiver settles in turn.
		receiver := target.SyslogReceiverScraper(nil)
		before, err := settledCounters(ctx, receiver, req.DrainTimeout.Duration, bench.SystemClock)
		if err != nil {
			return nil, fmt.Errorf("reading the syslog receiver's counters: %w", err)
		}
		run.receiver = &syslogReceiverRun{
			scraper: receiver, before: before, transport: req.Destination.EffectiveSyslog().Transport,
		}
	}
	return run, nil
}

// startShippedRun takes the shipper's counters, and Loki's refusals, before pgbench
// starts. The shipper first finishes what it is still sending, retries included, so that
// records of an earlier run or failed attempt (the grep filter passes every tag of the
// destination) do not count as this run's; settleTimeout bounds that wait. loki is nil when the
// shipper does not send to Loki.
func startShippedRun(
	ctx context.Context,
	shipper shipping.ShipperScraper,
	loki *shipping.LokiClient,
	selector, tag string,
	settleTimeout time.Duration,
	clock bench.Clock,
) (*shippedRun, error) {
	before, err := settledCounters(ctx, shipper, settleTimeout, clock)
	if err != nil {
		return nil, err
	}
	run := &shippedRun{shipper: shipper, before: before, unexplained: shipping.ShipperUnexplained}
	if loki != nil {
		run.loki = startLokiRun(ctx, loki, selector, tag, clock)
	}
	return run, nil
}

// settledCounters reads the shipper's counters once it has finished what it is still
// sending, waiting at most settleTimeout.
func settledCounters(ctx context.Context, shipper shipping.ShipperScraper, settleTimeout time.Duration,
	clock bench.Clock,
) (shipping.ShipperMetrics, error) {
	before, err := shipper.Read(ctx)
	if err != nil || before.Pending() <= 0 {
		// A shipper that has sent or dropped every record it kept has nothing in flight:
		// a fresh sidecar, or one whose last run drained, need not prove it by going quiet.
		return before, err
	}
	now := clock.Now()
	settle := bench.Wait{Ended: now, Deadline: now.Add(settleTimeout), Quiet: bench.ShippedQuiet}
	if _, err := bench.Drain(ctx, shipperSent{shipper}, records.Expectation{Estimate: true}, settle, clock); err != nil {
		return shipping.ShipperMetrics{}, err
	}
	return shipper.Read(ctx)
}

// Delivered is Loki's count of the run's records, or the records the shipper's output
// (the receiver Service's, for a forwarding Syslog destination) sent since the run
// started.
func (r *shippedRun) Delivered(ctx context.Context) (int64, error) {
	if r.loki != nil {
		return r.loki.Delivered(ctx)
	}
	if r.receiver != nil {
		run, err := r.receiver.countersOfRun(ctx)
		return run.Total().Sent, err
	}
	run, err := r.shipperCountersOfRun(ctx)
	return run.Total().Sent, err
}

// InFlight is how many of the run's records are still on their way: written to the file
// the shipper reads and not read yet, or kept by the shipper during the run and neither
// sent nor dropped yet, the syslog receiver's included. The drain waits for them, and
// ends once none are and Loki's or the output's count stops growing (bench.InFlight).
func (r *shippedRun) InFlight(ctx context.Context) (int64, error) {
	run, err := r.shipperCountersOfRun(ctx)
	if err != nil {
		return 0, err
	}
	pending := run.Pending()
	if r.written != nil {
		written, err := r.written.Delivered(ctx)
		if err != nil {
			return 0, fmt.Errorf("counting the records in the file the shipper reads: %w", err)
		}
		// The grep filter keeps the records of the destination's runs only: what the
		// shipper kept since the run started is this run's.
		pending += max(0, written-run.Kept())
	}
	if r.receiver == nil {
		return pending, nil
	}
	received, err := r.receiver.countersOfRun(ctx)
	return pending + received.Pending(), err
}

// Account reconciles the delivered records with the expectation and gives the reason of
// a drop from the shipper's and Loki's counters of the run.
func (r *shippedRun) Account(ctx context.Context, want records.Expectation, delivered int64) (v1alpha1.Records, error) {
	shipped, err := r.shipperCountersOfRun(ctx)
	if err != nil {
		return v1alpha1.Records{}, err
	}
	var refused map[string]int64
	var trouble shipping.LokiTrouble
	if r.loki != nil {
		refused, trouble = r.loki.since(ctx, delivered)
	}
	var held []string
	if pending := shipped.Pending(); pending > 0 {
		held = append(held, fmt.Sprintf(shipping.PendingReason, pending))
	}
	if r.receiver != nil {
		return r.receiver.account(ctx, want, delivered, shipped, r.loki != nil, refused, trouble, held, r.unexplained)
	}
	if r.written == nil {
		return shipping.Account(want, delivered, shipped.Total(), refused, nil, trouble, held, r.unexplained), nil
	}
	written, err := r.written.Delivered(ctx)
	if err != nil {
		return v1alpha1.Records{}, fmt.Errorf("counting the records in the file the shipper reads: %w", err)
	}
	var stored *int64
	if r.loki != nil {
		stored = &delivered
	}
	stages := shipping.Stages(written, shipped, stored)
	if r.pauses != nil {
		stages.InputPausedSeconds = r.pauses.pausedSeconds()
	}
	stages.Duplicates = shipping.StoredDuplicates(want, stages, shipped.Total(), refused)
	stageReasons := held
	if r.identity != nil && shipping.DuplicatesPossible(want, stages, shipped.Total(), refused) {
		if duplicates, err := r.loki.duplicates(ctx, r.identity, delivered); err != nil {
			stageReasons = append(stageReasons, "duplicates are a lower bound: "+err.Error())
		} else {
			stages.Duplicates, stages.DuplicatesExact = duplicates, true
		}
	}
	stages.LostAt = stages.LosingStage(want.Exact())
	if stages.LostAt == "read" {
		stageReasons = append(stageReasons, shipping.UnreadReason(stages))
	}
	return shipping.Account(want, delivered, shipped.Total(), refused, &stages, trouble, stageReasons, r.unexplained), nil
}

// LogBytes is what the server wrote to the file the shipper reads.
func (r *shippedRun) LogBytes() (int64, bool) {
	if meter, ok := r.written.(bench.VolumeMeter); ok {
		return meter.LogBytes()
	}
	return 0, false
}

func (r *shippedRun) shipperCountersOfRun(ctx context.Context) (shipping.ShipperMetrics, error) {
	now, err := r.shipper.Read(ctx)
	if err != nil {
		return shipping.ShipperMetrics{}, err
	}
	return now.Since(r.before)
}

func (r *syslogReceiverRun) countersOfRun(ctx context.Context) (shipping.ShipperMetrics, error) {
	now, err := r.scraper.Read(ctx)
	if err != nil {
		return shipping.ShipperMetrics{}, fmt.Errorf("reading the syslog receiver's counters: %w", err)
	}
	return now.Since(r.before)
}

// account reconciles what the receiver delivered with the expectation, counting the
// run's records at the sidecar (sidecar: its counters of the run) and at the receiver,
// so that what the transport lost is named as lost at the received stage.
func (r *syslogReceiverRun) account(ctx context.Context, want records.Expectation, delivered int64,
	sidecar shipping.ShipperMetrics, toLoki bool, refused map[string]int64, trouble shipping.LokiTrouble,
	held []string, unexplained string,
) (v1alpha1.Records, error) {
	received, err := r.countersOfRun(ctx)
	if err != nil {
		return v1alpha1.Records{}, err
	}
	var stored *int64
	if toLoki {
		stored = &delivered
	}
	stages := shipping.ForwardedStages(sidecar, received, stored)
	stages.Duplicates = shipping.StoredDuplicates(want, stages, received.Total(), refused)
	stages.LostAt = stages.LosingStage(want.Exact())
	if pending := received.Pending(); pending > 0 {
		held = append(held, fmt.Sprintf(shipping.PendingReason, pending))
	}
	reasons := append(held, shipping.ForwardedReasons(r.transport, stages, sidecar.Total())...)
	return shipping.Account(want, delivered, received.Total(), refused, &stages, trouble, reasons, unexplained), nil
}

// shipperSent is the cumulative count of records the shipper's outputs sent, as a
// bench.Destination whose drain tells when the shipper has settled.
type shipperSent struct{ shipper shipping.ShipperScraper }

func (s shipperSent) Delivered(ctx context.Context) (int64, error) {
	metrics, err := s.shipper.Read(ctx)
	return metrics.Total().Sent, err
}

// InFlight is what the shipper kept and has neither sent nor dropped yet.
func (s shipperSent) InFlight(ctx context.Context) (int64, error) {
	metrics, err := s.shipper.Read(ctx)
	return metrics.Pending(), err
}

// pauseSampling is how often the shipper's input is checked for a pause: Fluent Bit
// tells only whether it is paused now, not how often it was.
const pauseSampling = 500 * time.Millisecond

// pauseSampler reads the shipper's metrics at a fixed interval and counts the readings
// in which an input was paused on its buffer limit.
type pauseSampler struct {
	every  time.Duration
	stop   chan struct{}
	done   chan struct{}
	paused int64
}

func samplePauses(ctx context.Context, shipper shipping.ShipperScraper, every time.Duration) *pauseSampler {
	s := &pauseSampler{every: every, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stop:
				return
			case <-ticker.C:
				if metrics, err := shipper.Read(ctx); err == nil && metrics.InputsPaused > 0 {
					s.paused++
				}
			}
		}
	}()
	return s
}

// pausedSeconds stops the sampling and returns how long an input was seen paused.
func (s *pauseSampler) pausedSeconds() float64 {
	close(s.stop)
	<-s.done
	return float64(s.paused) * s.every.Seconds()
}
