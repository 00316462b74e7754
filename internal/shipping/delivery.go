package shipping

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/text"
)

// Account compares the records delivered by the end of the drain (counted in Loki when
// the records go there, the shipper's sent records of the run otherwise) with the
// expectation, as records.Reconcile does, and says where missing records went, the most
// telling first: Loki's trouble and refusals of the run, the shipper's counters of the
// run, then the reasons the caller found in the stages it counted (nil when it counted
// none), or unexplained when nothing tells. Records missing below an estimate's lower
// bound get their reason too. Dropped is never clamped: more records than expected is an
// accounting error, left as records.Reconcile reports it. The stored stage's duplicates
// (StoredDuplicates) are counted apart and never offset a drop.
func Account(want records.Expectation, delivered int64, shipped OutputCounters, lokiRefused map[string]int64,
	stages *v1alpha1.RecordStages, trouble LokiTrouble, stageReasons []string, unexplained string,
) v1alpha1.Records {
	count := records.Count{Delivered: delivered}
	if stages != nil {
		count.Duplicates, count.DuplicatesExact = stages.Duplicates, stages.DuplicatesExact
	}
	result := records.Reconcile(want, count)
	result.Stages = stages
	if result.KnownDropped() <= 0 {
		return result
	}
	reasons := trouble.reasons()
	if refused := sum(lokiRefused); refused > 0 {
		var byReason []string
		for _, reason := range slices.Sorted(maps.Keys(lokiRefused)) {
			if lokiRefused[reason] > 0 {
				byReason = append(byReason, fmt.Sprintf("%s %d", reason, lokiRefused[reason]))
			}
		}
		// Loki counts a record again each time a retried push is refused: this says why,
		// not how many were lost.
		reasons = append(
			reasons,
			fmt.Sprintf("loki refused pushes of %d samples, retries included (%s)", refused, strings.Join(byReason, ", ")),
		)
	}
	if shipped.Dropped > 0 {
		reasons = append(
			reasons,
			fmt.Sprintf("the shipper dropped %d records (errors or retries exhausted)", shipped.Dropped),
		)
	}
	if shipped.Retried > 0 {
		reasons = append(reasons, fmt.Sprintf("%d records needed retries", shipped.Retried))
	}
	reasons = append(reasons, stageReasons...)
	if len(reasons) == 0 {
		reasons = append(reasons, unexplained)
	}
	result.DropReason = strings.Join(reasons, "; ")
	return result
}

// ShipperUnexplained is the reason of a shipping destination's drop that neither the
// shipper nor Loki reports.
const ShipperUnexplained = "neither the shipper nor Loki reports a loss: the records were lost before the shipper " +
	"read them, or are still in its buffer"

// PendingReason says how many records the shipper still held, read but neither sent
// nor dropped, when the drain ended at its deadline: a retry may deliver them later.
const PendingReason = "%d records were still in the shipper (its buffer, or a push waiting for a retry) " +
	"when the drain's deadline passed"

// SyslogUnexplained is the reason of a Syslog destination's drop that neither the
// receiver nor Loki reports: glibc's syslog() blocks while the receiver's socket is full
// but drops, without a word, a message it cannot send at all.
const SyslogUnexplained = "neither the syslog receiver nor Loki reports a loss: the messages were lost before the " +
	"receiver read them (syslog() drops what it cannot send: no receiver on /dev/log, or a receiver that restarted " +
	"on a new socket) or are still in its buffer"

// LokiTrouble is what the agent saw go wrong with Loki during a run: the backend's
// failures, which explain drops before the shipper's counters do.
type LokiTrouble struct {
	// Restarted is set when the Loki serving /metrics at the end of the run is not the
	// one that served it at the start (LokiMetrics.RestartedSince).
	Restarted bool
	// CountFell is how far Loki's count of the run's records fell below a count it gave
	// earlier: records Loki had stored and lost.
	CountFell int64
	// Unanswered is how many counts of the drain Loki did not answer, the last with
	// LastError.
	Unanswered int
	LastError  string
}

// reasons explain drops by Loki's trouble, the most telling first.
func (t LokiTrouble) reasons() []string {
	var reasons []string
	if t.Restarted {
		reasons = append(reasons, "loki restarted during the run: records it held in memory or on storage "+
			"that did not survive the restart are lost")
	}
	if t.CountFell > 0 {
		reasons = append(reasons, fmt.Sprintf("loki's count of the run's records fell %d below its highest: "+
			"loki lost records it had stored", t.CountFell))
	}
	if t.Unanswered > 0 {
		reasons = append(reasons, fmt.Sprintf("loki did not answer %d counts during the drain (last: %s)",
			t.Unanswered, text.Truncate(t.LastError, 300)))
	}
	return reasons
}

// UnreadReason explains records the shipper had not read when the drain ended: an input
// paused on its buffer limit delays them, and they are lost only if the file goes first.
func UnreadReason(stages v1alpha1.RecordStages) string {
	unread := *stages.Written - *stages.Read
	if stages.InputPausedSeconds > 0 {
		return fmt.Sprintf("%d records were still unread in the file when the drain ended: the shipper's input paused "+
			"on its buffer limit for about %.1f s (delayed; lost only if the file goes before it reads them)",
			unread, stages.InputPausedSeconds)
	}
	return fmt.Sprintf("%d records in the file were not read by the shipper", unread)
}

// StoredDuplicates is the least number of copies of the run's records Loki holds beyond
// one each: what it stored beyond the fewest records an earlier stage held (written,
// read by the shipper, in a container log read whole, what the server can have
// emitted), when a push was retried (the shipper says so, or Loki refused one, which its
// client retries). An excess without a retry is left to the accounting error. The
// shipper's sent count is no bound: it can lag Loki's by the batch Loki has just stored,
// while a record is always read before it is stored.
func StoredDuplicates(want records.Expectation, stages v1alpha1.RecordStages, shipped OutputCounters,
	lokiRefused map[string]int64,
) int64 {
	if stages.Stored == nil {
		return 0
	}
	return records.Duplicates(*stages.Stored, pushRetried(shipped, lokiRefused), earlierStages(want, stages)...)
}

// DuplicatesPossible says whether Loki may hold a record of the run more than once: a
// push was retried, or Loki stored more than an earlier stage held. Only then is reading
// the stored records back to count them by identity worth its cost.
func DuplicatesPossible(want records.Expectation, stages v1alpha1.RecordStages, shipped OutputCounters,
	lokiRefused map[string]int64,
) bool {
	return stages.Stored != nil &&
		(pushRetried(shipped, lokiRefused) || *stages.Stored > slices.Min(earlierStages(want, stages)))
}

// pushRetried says whether the pipeline retried a push: the shipper says so, or Loki refused
// one, which its client retries.
func pushRetried(shipped OutputCounters, lokiRefused map[string]int64) bool {
	return shipped.Retried > 0 || sum(lokiRefused) > 0
}

// earlierStages are the counts of the stages before Loki that hold each record once.
func earlierStages(want records.Expectation, stages v1alpha1.RecordStages) []int64 {
	earlier := []int64{want.Upper()}
	for _, stage := range []*int64{stages.Written, stages.Read} {
		if stage != nil {
			earlier = append(earlier, *stage)
		}
	}
	if stages.ContainerLog != nil && stages.UnverifiedAt != "containerLog" {
		earlier = append(earlier, *stages.ContainerLog)
	}
	return earlier
}

// Stages counts a run's records at each stage: written in the file, kept by the
// shipper's input, sent by its output and, when the output is Loki, stored there.
func Stages(written int64, shipped ShipperMetrics, stored *int64) v1alpha1.RecordStages {
	stages := v1alpha1.RecordStages{
		Written: &written, Read: new(shipped.Kept()), Sent: new(shipped.Total().Sent), Stored: stored,
	}
	return stages
}

func sum(counts map[string]int64) int64 {
	var total int64
	for _, n := range counts {
		total += n
	}
	return total
}
