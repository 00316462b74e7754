package records

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/logbench/logbench/api/v1alpha1"
)

// zapSampler is the sampler controller-runtime puts on CloudNativePG's instance manager
// at info and above, over a core that keeps everything: it tells whether an entry logged
// at a time passes.
func zapSampler() func(at time.Time) bool {
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zapcore.EncoderConfig{}), zapcore.AddSync(io.Discard),
		zapcore.DebugLevel)
	sampler := zapcore.NewSamplerWithOptions(core, time.Second, 100, 100)
	return func(at time.Time) bool {
		return sampler.Check(zapcore.Entry{Level: zapcore.InfoLevel, Message: "record", Time: at}, nil) != nil
	}
}

// logAt spreads perSecond[i] entries evenly over second i from start, the way a steady
// pgbench run logs, and returns their times.
func logAt(start time.Time, perSecond []int64) []time.Time {
	var times []time.Time
	for second, n := range perSecond {
		for i := range n {
			offset := time.Duration(second)*time.Second + time.Duration(i)*time.Second/time.Duration(n)
			times = append(times, start.Add(offset))
		}
	}
	return times
}

// TestSamplerModelMatchesZap: the model's survivors of a window, and the windows and
// bounds rebuilt from the survivors' times, agree with zap's own sampler fed the same
// entries. The per-second counts include the rates of two measured runs on the local
// cluster with CloudNativePG 1.30.0 (log_statement=all, select-only): about 15,860
// statements a second (158,567 transactions in 10 s, 2,595 records reached the container
// log) and about 10,115 (202,304 statements in 20 s, 4,005 reached it).
func TestSamplerModelMatchesZap(t *testing.T) {
	for _, n := range []int64{0, 1, 99, 100, 101, 199, 200, 201, 299, 300, 15857, 10115} {
		pass := zapSampler()
		var survived int64
		for _, at := range logAt(time.Unix(1_800_000_000, 0), []int64{n}) {
			if pass(at) {
				survived++
			}
		}
		if got := SamplerSurvivors(n); got != survived {
			t.Errorf("SamplerSurvivors(%d) = %d, zap let %d through", n, got, survived)
		}
		if least, most := SamplerReceived(survived); n < least || n > most {
			t.Errorf("SamplerReceived(%d) = [%d, %d], does not hold the %d received", survived, least, most, n)
		}
	}

	for name, perSecond := range map[string][]int64{
		"below the sampler's 100 a second": {40, 99, 60},
		"a steady default-level run":       {15857, 15857, 15857, 15857, 15857, 15857, 15857, 15857, 15857, 15857},
		"a ramp":                           {50, 150, 1000, 10115, 10115, 350, 20},
		"a start inside a second":          {0, 7, 12000, 12000, 3},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Date(2026, 11, 26, 12, 0, 0, 123_456_789, time.UTC)
			pass := zapSampler()
			windows := NewSamplerWindows("lb_stdout_c2_r1_abc", time.Time{})
			var written, survived int64
			for _, at := range logAt(start, perSecond) {
				written++
				if pass(at) {
					survived++
					line := fmt.Sprintf(`{"level":"info","ts":%q,"logger":"postgres","msg":"record",`+
						`"record":{"application_name":"lb_stdout_c2_r1_abc"}}`+"\n", at.Format(time.RFC3339Nano))
					// Written in two parts, split inside the tag.
					_, _ = windows.Write([]byte(line[:len(line)-12]))
					_, _ = windows.Write([]byte(line[len(line)-12:]))
				}
			}
			check := CheckSampler(Expectation{Records: written}, survived, windows.Log())
			if written < check.ReceivedMin || written > check.ReceivedMax {
				t.Errorf("%d written, outside the rebuilt [%d, %d] from %d survivors in %d windows",
					written, check.ReceivedMin, check.ReceivedMax, survived, check.Windows)
			}
			want := v1alpha1.SamplerMatches
			if survived == written {
				want = v1alpha1.SamplerNoLoss
			}
			if check.Verdict != want {
				t.Errorf("verdict %s, want %s: %s", check.Verdict, want, check.Message)
			}
		})
	}
}

// TestSamplerOthersSampledToo: records of other sessions, or of a warm-up just before
// the run, pass the same sampler as the run's, so a window's survivors are shared; the
// run's share of the later survivors tells its share of what the window received. (A
// pgaudit row of the e2e suite, 714 of 22,086 records in 6 windows, reads as NotSampled
// if each other survivor stands for itself only.)
func TestSamplerOthersSampledToo(t *testing.T) {
	const tag = "lb_stdout_c1_r1_abc"
	for name, tc := range map[string]struct {
		before, run, other []int64 // per second: a warm-up's records, then the run's and others' interleaved
	}{
		"a fifth of each second is another session's": {run: []int64{4400, 4400, 4400, 4400, 4400}, other: []int64{1100, 1100, 1100, 1100, 1100}},
		"half and half": {run: []int64{2000, 2000, 2000}, other: []int64{2000, 2000, 2000}},
		"a warm-up logging into the run's first window": {before: []int64{8000}, run: []int64{4400, 4400, 4400, 4400, 4400}},
		"the run alone":                   {run: []int64{15857, 15857, 15857}},
		"few others, below the first 100": {run: []int64{30, 60}, other: []int64{5, 5}},
	} {
		t.Run(name, func(t *testing.T) {
			pass := zapSampler()
			random := rand.New(rand.NewPCG(10815, 11131))
			windows := NewSamplerWindows(tag, time.Time{})
			var written, survived int64
			log := func(at time.Time, ofRun bool) {
				if ofRun {
					written++
				}
				if !pass(at) {
					return
				}
				application := "other"
				if ofRun {
					survived++
					application = tag
				}
				_, _ = fmt.Fprintf(windows, `{"level":"info","ts":%q,"logger":"postgres","msg":"record",`+
					`"record":{"application_name":%q}}`+"\n", at.Format(time.RFC3339Nano), application)
			}
			start := time.Date(2026, 11, 26, 12, 0, 0, 250_000_000, time.UTC)
			for _, at := range logAt(start.Add(-time.Duration(len(tc.before))*time.Second), tc.before) {
				log(at, false)
			}
			for second, n := range tc.run {
				others := int64(0)
				if second < len(tc.other) {
					others = tc.other[second]
				}
				// Interleaved at random, as sessions are: evenly spaced entries would alias
				// with the sampler's every 100th.
				for _, at := range logAt(start.Add(time.Duration(second)*time.Second), []int64{n + others}) {
					log(at, random.Int64N(n+others) >= others)
				}
			}
			check := CheckSampler(Expectation{Records: written}, survived, windows.Log())
			if written < check.ReceivedMin || written > check.ReceivedMax {
				t.Errorf("%d written, outside the rebuilt [%d, %d] from %d survivors in %d windows",
					written, check.ReceivedMin, check.ReceivedMax, survived, check.Windows)
			}
			if want := v1alpha1.SamplerMatches; survived < written && check.Verdict != want {
				t.Errorf("verdict %s, want %s: %s", check.Verdict, want, check.Message)
			}
			// Without others sampled beside the run's, the bounds are the sampler's own
			// (within 100 a window): the model holds a run within 5% of its records.
			if spread := check.ReceivedMax - check.ReceivedMin; len(tc.other) == 0 && float64(spread) > 0.05*float64(written) {
				t.Errorf("bounds [%d, %d] spread %d for %d written: more than 5%%",
					check.ReceivedMin, check.ReceivedMax, spread, written)
			}
		})
	}
}

// TestSamplerWindowsReadFromTheMiddle: a stream of the container log opened after a
// warm-up starts inside one of the sampler's windows. Counted from its first survivor,
// each window takes the next one's first 100 entries for later survivors standing for
// 100 each (a run of 115,316 records on the local cluster was bounded at 125,615 to
// 126,605). A survivor opens a window for certain only after a tick in which none
// passed: the run's records before one leave the bounds unknown, and a marker logged
// after such a tick gives exact bounds.
func TestSamplerWindowsReadFromTheMiddle(t *testing.T) {
	const tag = "lb_stdout_c1_r1_abc"
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// A warm-up logs from start, a marker at marker (none if zero), the run from run.
		warmup      []int64
		marker, run time.Duration
		since       time.Duration
		verdict     v1alpha1.SamplerVerdict
	}{
		{name: "opened inside the warm-up, the run right after it", warmup: []int64{8000, 8000, 8000},
			since: 2300 * time.Millisecond, run: 3 * time.Second, verdict: v1alpha1.SamplerUnknown},
		{name: "a marker after a quiet tick", warmup: []int64{8000, 8000, 8000},
			since: 2300 * time.Millisecond, marker: 4200 * time.Millisecond, run: 4300 * time.Millisecond,
			verdict: v1alpha1.SamplerMatches},
		{name: "opened before the warm-up, after a quiet tick", warmup: []int64{0, 8000, 8000},
			since: 0, run: 3 * time.Second, verdict: v1alpha1.SamplerMatches},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pass := zapSampler()
			windows := NewSamplerWindows(tag, start.Add(tc.since))
			var written, survived int64
			log := func(at time.Time, application string) {
				if pass(at) && !at.Before(start.Add(tc.since)) {
					_, _ = fmt.Fprintf(windows, `{"level":"info","ts":%q,"logger":"postgres","msg":"record",`+
						`"record":{"application_name":%q}}`+"\n", at.Format(time.RFC3339Nano), application)
					if application == tag {
						survived++
					}
				}
			}
			for _, at := range logAt(start, tc.warmup) {
				log(at, "warm-up")
			}
			if tc.marker > 0 {
				log(start.Add(tc.marker), "")
			}
			for _, at := range logAt(start.Add(tc.run), []int64{4400, 4400, 4400, 4400, 4400}) {
				written++
				log(at, tag)
			}
			check := CheckSampler(Expectation{Records: written}, survived, windows.Log())
			if check.Verdict != tc.verdict {
				t.Fatalf("verdict %s, want %s: %s", check.Verdict, tc.verdict, check.Message)
			}
			if tc.verdict == v1alpha1.SamplerUnknown {
				if !strings.Contains(check.Message, "cannot be told") {
					t.Errorf("message %q does not say the windows cannot be told", check.Message)
				}
				return
			}
			if written < check.ReceivedMin || written > check.ReceivedMax {
				t.Errorf("%d written, outside the rebuilt [%d, %d] from %d survivors in %d windows",
					written, check.ReceivedMin, check.ReceivedMax, survived, check.Windows)
			}
		})
	}
}

// TestCheckSamplerVerdicts: a loss beyond what the windows' survivors allow exceeds the
// sampler; more records than a sampler lets through were not sampled (logLevel debug).
func TestCheckSamplerVerdicts(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tenSeconds := func(run, other int64) []SamplerWindow {
		windows := make([]SamplerWindow, 0, 10)
		for i := range 10 {
			// The others came first, unsampled, as the server's own few records do.
			windows = append(windows, SamplerWindow{Start: start.Add(time.Duration(i) * time.Second), Run: run, Other: other,
				LaterRun: max(0, run+other-samplerFirst)})
		}
		return windows
	}
	for _, tc := range []struct {
		name      string
		want      Expectation
		delivered int64
		windows   []SamplerWindow
		verdict   v1alpha1.SamplerVerdict
		message   string
	}{
		{name: "the default level's loss", want: Expectation{Records: 158_569}, delivered: 2_570,
			windows: tenSeconds(257, 0), verdict: v1alpha1.SamplerMatches, message: "cloudnative-pg issue #10815"},
		{name: "another record in each window", want: Expectation{Records: 158_569}, delivered: 2_560,
			windows: tenSeconds(256, 1), verdict: v1alpha1.SamplerMatches},
		{name: "a loss besides the sampler", want: Expectation{Records: 200_000}, delivered: 2_570,
			windows: tenSeconds(257, 0), verdict: v1alpha1.SamplerExceeds, message: "at least 41010 records were lost"},
		{name: "a slow run loses nothing to the sampler", want: Expectation{Records: 1_000}, delivered: 900,
			windows: tenSeconds(90, 0), verdict: v1alpha1.SamplerExceeds, message: "at least 100 records were lost"},
		{name: "debug level: nothing sampled", want: Expectation{Records: 63_650}, delivered: 63_650,
			windows: tenSeconds(6_365, 0), verdict: v1alpha1.SamplerNotSampled},
		{name: "nothing lost", want: Expectation{Records: 900}, delivered: 900,
			windows: tenSeconds(90, 0), verdict: v1alpha1.SamplerNoLoss},
		{name: "bounds above what the server wrote", want: Expectation{Records: 1_900}, delivered: 1_010,
			windows: tenSeconds(101, 0), verdict: v1alpha1.SamplerUnknown, message: "misread its windows"},
		{name: "bounds above an estimate's most", want: Expectation{Records: 1_500, Max: 1_900, Estimate: true},
			delivered: 1_010, windows: tenSeconds(101, 0), verdict: v1alpha1.SamplerUnknown, message: "can have written (1900)"},
		{name: "no most to exceed", want: Expectation{Records: 1_500, Estimate: true, Unpredictable: true},
			delivered: 1_010, windows: tenSeconds(101, 0), verdict: v1alpha1.SamplerMatches},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckSampler(tc.want, tc.delivered, SamplerLog{Windows: tc.windows})
			if got.Verdict != tc.verdict || !strings.Contains(got.Message, tc.message) {
				t.Errorf("%s: %s; want %s saying %q", got.Verdict, got.Message, tc.verdict, tc.message)
			}
		})
	}
}

// TestJudgeSamplerOnMeasuredRows: rows of the e2e suite on the local cluster
// (CloudNativePG 1.30.0) whose windows, counted from a start the stream did not see,
// bounded more records than were written: once judged NotSampled though they kept 5% and
// 3% of them (a sampled run cannot let more through than 100 a window and one in a
// hundred of the rest), then MatchesSampler on impossible bounds.
func TestJudgeSamplerOnMeasuredRows(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		expected, delivered  int64
		least, most, windows int64
		verdict              v1alpha1.SamplerVerdict
	}{
		{"default level, 1 client", 25_148, 1_235, 25_292, 26_282, 11, v1alpha1.SamplerUnknown},
		{"pgaudit, 1 client", 22_086, 714, 23_187, 23_781, 6, v1alpha1.SamplerUnknown},
		{"default level, bounds that hold", 25_148, 1_235, 25_092, 26_082, 11, v1alpha1.SamplerMatches},
		{"debug level, 1 client", 21_972, 21_972, 2_197_200, 2_198_199, 11, v1alpha1.SamplerNotSampled},
	} {
		check := v1alpha1.SamplerCheck{ReceivedMin: tc.least, ReceivedMax: tc.most, Windows: int32(tc.windows)}
		if got := JudgeSampler(check, Expectation{Records: tc.expected}, tc.delivered); got.Verdict != tc.verdict {
			t.Errorf("%s: %s, want %s: %s", tc.name, got.Verdict, tc.verdict, got.Message)
		}
	}
}

// TestSamplerWindowsReadsCloudNativePGLines: only entries "record" count, with their
// time as an RFC 3339 string or epoch seconds; the tag decides whose they are, and a
// window opens at the first entry a second or more after the previous one opened.
func TestSamplerWindowsReadsCloudNativePGLines(t *testing.T) {
	const tag = "lb_stdout_c1_r1_abc"
	log := strings.Join([]string{
		`{"level":"info","ts":"2026-11-26T12:00:00.5Z","logger":"postgres","msg":"record","record":{"application_name":"` + tag + `"}}`,
		`{"level":"info","ts":"2026-11-26T12:00:00.9Z","logger":"instance-manager","msg":"checkpoint ` + tag + `"}`,
		`{"level":"info","ts":"2026-11-26T12:00:01.2Z","logger":"postgres","msg":"record","record":{"message":"checkpoint"}}`,
		`{"level":"info","ts":1795694401.5,"logger":"postgres","msg":"record","record":{"application_name":"` + tag + `"}}`,
		`{"level":"info","ts":"garbage","logger":"postgres","msg":"record","record":{"application_name":"` + tag + `"}}`,
		`{"level":"info","ts":"2026-11-26T12:00:03Z","logger":"postgres","msg":"record","record":{"message":"other"}}`,
	}, "\n") + "\n"
	windows := NewSamplerWindows(tag, time.Time{})
	for chunk := range strings.SplitSeq(log, "r") {
		_, _ = windows.Write([]byte(chunk + "r"))
	}
	got := windows.Log().Windows
	want := []SamplerWindow{
		{Start: time.Date(2026, 11, 26, 12, 0, 0, 500_000_000, time.UTC), Run: 1, Other: 1},
		{Start: time.Date(2026, 11, 26, 12, 0, 1, 500_000_000, time.UTC), Run: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("windows %v, want %v", got, want)
	}
}

// FuzzSamplerWindows: any log, in chunks split anywhere, gives the windows it gives in
// one write, and never a window without a record of the run or beyond the run's records.
func FuzzSamplerWindows(f *testing.F) {
	f.Add(`{"level":"info","ts":"2026-11-26T12:00:00.5Z","logger":"postgres","msg":"record","record":{"a":"tag"}}`+"\n", 7)
	f.Add(`{"ts":1795694401.5,"msg":"record"} tag`+"\n"+`{"ts":"x","msg":"record"}`, 3)
	f.Add("\n\n\"ts\":\"msg\":\"record\"tagtag\n", 1)
	f.Fuzz(func(t *testing.T, log string, split int) {
		whole := NewSamplerWindows("tag", time.Time{})
		_, _ = whole.Write([]byte(log))
		chunked := NewSamplerWindows("tag", time.Time{})
		step := max(1, split%64)
		for start := 0; start < len(log); start += step {
			_, _ = chunked.Write([]byte(log[start:min(len(log), start+step)]))
		}
		got, want := chunked.Log(), whole.Log()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("in chunks of %d: %v, in one write: %v", step, got, want)
		}
		run := want.Unplaced
		for _, window := range want.Windows {
			if window.Run <= 0 {
				t.Fatalf("a window without the run's records: %v", want)
			}
			run += window.Run
		}
		if lines := int64(strings.Count(log, "\n")); run > lines {
			t.Fatalf("%d of the run's records in %d complete lines", run, lines)
		}
	})
}
