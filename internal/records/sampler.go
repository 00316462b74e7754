package records

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
)

// CloudNativePG's instance manager, up to 1.30.0, prints every csvlog record on stdout
// as the message "record" through controller-runtime's zap logger, which at info and
// above samples by level and message (cloudnative-pg issue #10815, fixed after 1.30.0 by
// PR #11131). zapcore's sampler counts the entries of a key in a window that the first
// entry after the previous window's end opens, for one tick from that entry's time (not
// aligned to the clock); the n-th entry of a window passes when n <= first or
// (n - first) is a multiple of thereafter.
const (
	samplerTick       = time.Second
	samplerFirst      = 100
	samplerThereafter = 100
)

// SamplerIssue names the upstream issue in what a row says.
const SamplerIssue = "cloudnative-pg issue #10815, fixed after 1.30.0 by PR #11131"

// SamplerSurvivors is how many of n entries of one key in one window of the sampler
// pass it: the first 100, then the 200th, the 300th and so on.
func SamplerSurvivors(n int64) int64 {
	if n <= samplerFirst {
		return n
	}
	return samplerFirst + (n-samplerFirst)/samplerThereafter
}

// SamplerReceived bounds the entries of one key that a window of the sampler received
// from how many it let through: SamplerSurvivors inverted. Below 100 every entry passed;
// from 100 on, each survivor stands for 100 entries.
func SamplerReceived(survivors int64) (least, most int64) {
	if survivors < samplerFirst {
		return survivors, survivors
	}
	least = samplerFirst + (survivors-samplerFirst)*samplerThereafter
	return least, least + samplerThereafter - 1
}

// SamplerWindow is one window of the sampler as the container log shows it: when its
// first entry was logged, and the entries it let through, the run's and others'. The
// later ones are those after the window's first 100: each stands for the 100 entries up
// to it, so which of the run's and others' they are tells how the sampled entries split
// (a warm-up or another session logging in the same window is sampled too).
type SamplerWindow struct {
	Start                time.Time
	Run, Other           int64
	LaterRun, LaterOther int64
}

// SamplerLog is what the container log tells of the sampler's windows: the windows that
// held records of the run, and the run's records that passed before the first window
// whose start could be told.
type SamplerLog struct {
	Windows []SamplerWindow
	// Unplaced counts the run's records seen before the first window start that could
	// be told; UnplacedWindows is how many windows they may span.
	Unplaced, UnplacedWindows int64
}

// SamplerWindows rebuilds the sampler's windows of the message "record" from the
// container log as it is written to it: every entry that opens a window passes the
// sampler, so the survivors' own times show where each window starts. A log read from
// the middle does not show where its first window started: a survivor opens a window for
// certain only if no entry passed in the second before it, which takes seeing that
// second whole, from the log's start on. Survivors before the first such one cannot be
// put in windows: counted from the wrong start, each window would take up to 100
// entries of the next for later survivors standing for 100 each. It keeps the start of
// the current line (where CloudNativePG puts the time and the message) and whether the
// line holds the run's tag. Safe for one writer and concurrent readers.
type SamplerWindows struct {
	mu      sync.Mutex
	tag     []byte
	head    []byte
	tail    []byte
	tagSeen bool
	windows []SamplerWindow
	// lastSurvivor is the time of the latest survivor seen, or the log's start until one
	// is seen after it; windows stays empty until a survivor comes a tick after it.
	lastSurvivor time.Time
	// unplaced counts the run's survivors before the first window, first and last the
	// times of the first and last of them.
	unplaced                    int64
	firstUnplaced, lastUnplaced time.Time
	// arrived is when the last survivor, or the log's start, reached this reader.
	arrived time.Time
}

// samplerHead is how much of a line is kept to find its time and message: CloudNativePG
// writes the level, time, logger and message before the record's fields.
const samplerHead = 256

// NewSamplerWindows rebuilds the sampler's windows of a log whose run's records hold tag,
// read from since: every entry logged from then on is in it (the zero time: from the
// sampler's first entry).
func NewSamplerWindows(tag string, since time.Time) *SamplerWindows {
	return &SamplerWindows{tag: []byte(tag), lastSurvivor: since, arrived: time.Now()}
}

// Placed tells whether a window start has been told: the windows from it on are the
// sampler's.
func (w *SamplerWindows) Placed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.windows) > 0
}

// samplerWayMargin is what UntilQuiet adds to the tick for a survivor's way from the
// instance manager to this reader.
const samplerWayMargin = 100 * time.Millisecond

// UntilQuiet is how long until this reader will have seen no survivor for a tick since
// the last one reached it, or the log started: an entry logged then that passes opens a
// window whose start can be told, unless another entry passed in between.
func (w *SamplerWindows) UntilQuiet() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(0, samplerTick+samplerWayMargin-time.Since(w.arrived))
}

// Write takes the log in chunks of any size.
func (w *SamplerWindows) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	written := len(p)
	for len(p) > 0 {
		end := bytes.IndexByte(p, '\n')
		part := p
		if end >= 0 {
			part = p[:end]
		}
		w.take(part)
		if end < 0 {
			break
		}
		w.endLine()
		p = p[end+1:]
	}
	return written, nil
}

// take reads the next part of the current line.
func (w *SamplerWindows) take(part []byte) {
	if room := samplerHead - len(w.head); room > 0 {
		w.head = append(w.head, part[:min(room, len(part))]...)
	}
	if w.tagSeen || len(w.tag) == 0 {
		w.tagSeen = true
		return
	}
	joined := append(w.tail, part...)
	w.tagSeen = bytes.Contains(joined, w.tag)
	keep := min(len(joined), len(w.tag)-1)
	w.tail = append(w.tail[:0], joined[len(joined)-keep:]...)
}

func (w *SamplerWindows) endLine() {
	if at, ok := sampledRecordTime(w.head); ok {
		w.add(at, w.tagSeen)
	}
	w.head, w.tail, w.tagSeen = w.head[:0], w.tail[:0], false
}

// add puts an entry that passed the sampler at its time into its window, once a window
// start has been told.
func (w *SamplerWindows) add(at time.Time, ofRun bool) {
	w.arrived = time.Now()
	if len(w.windows) == 0 {
		opens := !at.Before(w.lastSurvivor.Add(samplerTick))
		if at.After(w.lastSurvivor) {
			w.lastSurvivor = at
		}
		if !opens {
			if ofRun {
				if w.unplaced == 0 {
					w.firstUnplaced = at
				}
				w.unplaced++
				w.lastUnplaced = at
			}
			return
		}
	}
	if n := len(w.windows); n == 0 || !at.Before(w.windows[n-1].Start.Add(samplerTick)) {
		w.windows = append(w.windows, SamplerWindow{Start: at})
	}
	window := &w.windows[len(w.windows)-1]
	later := window.Run+window.Other >= samplerFirst
	switch {
	case ofRun && later:
		window.Run++
		window.LaterRun++
	case ofRun:
		window.Run++
	case later:
		window.Other++
		window.LaterOther++
	default:
		window.Other++
	}
}

// Log returns the windows that held records of the run, and the run's records seen
// before the first.
func (w *SamplerWindows) Log() SamplerLog {
	w.mu.Lock()
	defer w.mu.Unlock()
	log := SamplerLog{Unplaced: w.unplaced}
	if w.unplaced > 0 {
		// Windows last a tick or more: a span meets at most this many of them.
		log.UnplacedWindows = int64(w.lastUnplaced.Sub(w.firstUnplaced)/samplerTick) + 2
	}
	for _, window := range w.windows {
		if window.Run > 0 {
			log.Windows = append(log.Windows, window)
		}
	}
	return log
}

var (
	recordMessage = []byte(`"msg":"record"`)
	timeField     = []byte(`"ts":`)
)

// sampledRecordTime reads the time of an entry "record" of the instance manager from
// the start of its line: an RFC 3339 string or seconds since the epoch.
func sampledRecordTime(head []byte) (time.Time, bool) {
	if !bytes.Contains(head, recordMessage) {
		return time.Time{}, false
	}
	_, value, found := bytes.Cut(head, timeField)
	if !found {
		return time.Time{}, false
	}
	if end := bytes.IndexAny(value, ",}"); end >= 0 {
		value = value[:end]
	}
	if unquoted, err := strconv.Unquote(string(value)); err == nil {
		t, err := time.Parse(time.RFC3339Nano, unquoted)
		return t, err == nil
	}
	seconds, err := strconv.ParseFloat(string(value), 64)
	if err != nil || seconds <= 0 {
		return time.Time{}, false
	}
	whole := int64(seconds)
	return time.Unix(whole, int64((seconds-float64(whole))*1e9)).UTC(), true
}

// CheckSampler compares the run's records with what the sampler's windows let through.
// Each window's survivors bound what it received. Its first 100 entries all passed, so
// the run's among them are counted; each later survivor stands for the 100 entries up to
// it, of which the run's share is estimated by the run's share of the later survivors,
// within three binomial standard deviations of the windows together (none when the
// windows held only the run's records, which makes the bounds exact); up to 99 entries
// after a window's last survivor are unseen. The expectation is between want.Records and
// want.Upper(); delivered is the run's records counted in the container log. The run's
// records seen before the first window's start could be told leave the bounds unknown,
// unless more passed than any sampler lets through or none was lost.
func CheckSampler(want Expectation, delivered int64, log SamplerLog) v1alpha1.SamplerCheck {
	check := v1alpha1.SamplerCheck{Windows: int32(int64(len(log.Windows)) + log.UnplacedWindows)}
	if log.Unplaced > 0 {
		bounded := check
		bounded.ReceivedMin, bounded.ReceivedMax = delivered, max(delivered, want.Upper())
		if judged := JudgeSampler(bounded, want, delivered); judged.Verdict == v1alpha1.SamplerNotSampled ||
			judged.Verdict == v1alpha1.SamplerNoLoss {
			return judged
		}
		check.Verdict = v1alpha1.SamplerUnknown
		check.Message = fmt.Sprintf("CloudNativePG's log sampler (%s) let %d of the run's records through, %d of them "+
			"before logbench's stream of the container log showed where one of the sampler's one-second windows "+
			"starts: how many it received cannot be told", SamplerIssue, delivered, log.Unplaced)
		return check
	}
	var counted, estimate, unseen int64
	var variance float64
	for _, window := range log.Windows {
		counted += window.Run
		if window.Run+window.Other < samplerFirst {
			estimate += window.Run
			continue
		}
		estimate += window.Run - window.LaterRun + samplerThereafter*window.LaterRun
		unseen += samplerThereafter - 1
		if later := window.LaterRun + window.LaterOther; later > 0 {
			share := float64(window.LaterRun) / float64(later)
			variance += samplerThereafter * samplerThereafter * float64(later) * share * (1 - share)
		}
	}
	spread := int64(math.Ceil(3 * math.Sqrt(variance)))
	check.ReceivedMin = max(counted, estimate-spread)
	check.ReceivedMax = estimate + spread + unseen
	return JudgeSampler(check, want, delivered)
}

// JudgeSampler gives the verdict and message of bounds on the run's records the sampler
// received: whether the run was sampled at all, and whether the sampler explains the loss
// or something else lost records too. Bounds above what the server can have written are
// no verdict.
func JudgeSampler(check v1alpha1.SamplerCheck, want Expectation, delivered int64) v1alpha1.SamplerCheck {
	through := fmt.Sprintf("its %d one-second windows let %d of the run's records through, so it received between "+
		"%d and %d of them", check.Windows, delivered, check.ReceivedMin, check.ReceivedMax)
	switch {
	case delivered > samplerMostThrough(want.Upper(), int64(check.Windows)):
		check.Verdict = v1alpha1.SamplerNotSampled
		check.Message = fmt.Sprintf("CloudNativePG's instance manager did not sample the run's records: a sampler "+
			"(%s) lets at most %d of %d records through in %d windows, and %d were counted",
			SamplerIssue, samplerMostThrough(want.Upper(), int64(check.Windows)), want.Upper(), check.Windows, delivered)
	case delivered >= want.Records:
		check.Verdict = v1alpha1.SamplerNoLoss
		check.Message = fmt.Sprintf("every expected record reached the container log; %s", through)
	case !want.Unpredictable && check.ReceivedMin > want.Upper():
		// More than the server wrote: the windows were misread, and bounds from them
		// would clear any loss.
		check.Verdict = v1alpha1.SamplerUnknown
		check.Message = fmt.Sprintf("CloudNativePG's log sampler (%s) cannot have received more of the run's records "+
			"than the server can have written (%d), yet %s: logbench misread its windows, and how many it dropped "+
			"cannot be told",
			SamplerIssue, want.Upper(), through)
	case want.Records <= check.ReceivedMax:
		check.Verdict = v1alpha1.SamplerMatches
		check.Message = fmt.Sprintf("the loss matches CloudNativePG's log sampler (%s): %s, for %d expected",
			SamplerIssue, through, want.Records)
	default:
		check.Verdict = v1alpha1.SamplerExceeds
		check.Message = fmt.Sprintf("the loss exceeds CloudNativePG's log sampler (%s): %s, and %d were expected: "+
			"at least %d records were lost besides the sampler", SamplerIssue, through, want.Records,
			want.Records-check.ReceivedMax)
	}
	return check
}

// samplerMostThrough is the most of n records a sampler lets through in windows windows:
// 100 in each, and one in a hundred of the rest, one more a window for rounding. It does
// not lean on the windows' bounds, which a survivor put in the wrong window (times are
// printed to the millisecond) or others' records sharing the windows move by hundreds.
func samplerMostThrough(n, windows int64) int64 {
	first := min(n, samplerFirst*windows)
	return first + (n-first)/samplerThereafter + windows
}
