package agent

import (
	"cmp"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/records"
)

func TestNodeAgentSelectorNamesThePrimary(t *testing.T) {
	for name, tc := range map[string]struct {
		selector, want string
	}{
		"the default": {"", `{namespace="bench", pod="bench-platform-2"}`},
		"OpenTelemetry's attribute labels": {`{k8s_namespace_name="${namespace}", k8s_pod_name="${pod}"}`,
			`{k8s_namespace_name="bench", k8s_pod_name="bench-platform-2"}`},
		"container and cluster": {`{job="${namespace}/${cluster}", container="${container}"}`,
			`{job="bench/bench-platform", container="postgres"}`},
	} {
		t.Run(name, func(t *testing.T) {
			got := NodeAgentSelector(v1alpha1.LokiSpec{Selector: tc.selector}, "bench", "bench-platform-2", "bench-platform")
			if got != tc.want {
				t.Errorf("selector %s, want %s", got, tc.want)
			}
		})
	}
}

// containerLogHolding is a container log run whose stream held n records of the run
// tagged tag, all logged in the same second, of which the newest file holds inNewest;
// sampled rebuilds CloudNativePG's sampler windows from them.
func containerLogHolding(t *testing.T, tag string, n, inNewest int64, sampled bool) *containerLogRun {
	t.Helper()
	record := `{"level":"info","ts":"2026-11-23T10:43:03.996Z","logger":"postgres","msg":"record","logging_pod":"lb-1",` +
		`"record":{"application_name":"` + tag + `","message":"statement: select 1"}}` + "\n"
	// A followed log stays open: its end would be an error.
	reader, writer := io.Pipe()
	t.Cleanup(func() { writer.Close() })
	go func() { _, _ = writer.Write([]byte(strings.Repeat(record, int(n)))) }()
	var sampler *records.SamplerWindows
	var log io.ReadCloser = reader
	if sampled {
		sampler = records.NewSamplerWindows(tag, time.Time{})
		log = readCloser{io.TeeReader(reader, sampler), reader}
	}
	stream := bench.NewStreamDestination(log, records.FormatContainerLog, tag)
	deadline := time.Now().Add(5 * time.Second)
	for count, _ := stream.Delivered(context.Background()); count < n && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		count, _ = stream.Delivered(context.Background())
	}
	opened := time.Now()
	return &containerLogRun{
		StreamDestination: stream,
		inNewestFile:      func(context.Context) (int64, error) { return inNewest, nil },
		// The newest file began before the stream opened: no rotation since.
		newestFileBegan: func(context.Context) (time.Time, error) { return opened.Add(-time.Minute), nil },
		opened:          opened,
		sampler:         sampler,
	}
}

// TestNodeAgentRunNamesTheLosingStage: delivered is Loki's count; the container log's
// count beside it tells whether the kubelet's log or the agent and Loki lost records, and
// the reason follows from Loki's refusals, the log's rotations and CloudNativePG's
// sampler. A container log count a rotation cut short is unverified, never the kubelet's
// loss.
func TestNodeAgentRunNamesTheLosingStage(t *testing.T) {
	const tag = "lb_platform_c1_r1_abc"
	for name, tc := range map[string]struct {
		inLog, inNewest, stored, refused int64
		// containerLog is the container log stage's count when not the stream's.
		containerLog     int64
		skipLog, sampled bool
		lostAt, reason   string
		unverified       int64
		unverifiedReason string
		// samplerVerdict is the sampler check's verdict, when told.
		samplerVerdict v1alpha1.SamplerVerdict
	}{
		"every record stored": {inLog: 1000, inNewest: 1000, stored: 1000},
		"loki refused records": {inLog: 1000, inNewest: 1000, stored: 700, refused: 450, lostAt: "stored",
			reason: "loki refused pushes of 450 samples, retries included (rate_limited 450)"},
		"the agent lost records behind a rotation": {inLog: 1000, inNewest: 300, stored: 600, lostAt: "stored",
			reason: "the kubelet rotated the container log during the run: the node agent must read each file " +
				"before the kubelet removes it; 400 records the container log held are not in loki"},
		"lost after the container log, no one tells": {inLog: 1000, inNewest: 1000, stored: 990, lostAt: "stored",
			reason: nodeAgentUnexplained},
		"the container log lacks records": {inLog: 950, inNewest: 950, stored: 950, lostAt: "containerLog",
			reason: "the container log as the kubelet serves it lacks records the server wrote"},
		"a rotation hid records from logbench's stream, the agent stored them all": {inLog: 600, inNewest: 10,
			stored: 1000, unverified: 400, unverifiedReason: "the node agent, which reads the rotated files, stored " +
				"400 records beyond the 600 logbench's stream read"},
		"a rotation hid records, and loki lacks some": {inLog: 600, inNewest: 10, stored: 950, lostAt: "stored",
			reason: unverifiedStageUnknown, unverified: 400, unverifiedReason: "400 records not read by logbench"},
		"logbench's stream skipped records the newest file holds, the agent stored them all": {inLog: 0,
			inNewest: 700, containerLog: 700, stored: 1000, unverified: 300, unverifiedReason: "read fewer of the " +
				"run's records than the newest log file holds"},
		"csvlog records sampled on their way to the container log": {inLog: 109, inNewest: 109, stored: 109,
			sampled: true, lostAt: "containerLog", reason: "the loss matches CloudNativePG's log sampler " +
				"(cloudnative-pg issue #10815", samplerVerdict: v1alpha1.SamplerMatches},
		"csvlog records sampled, and a rotation under the stream": {inLog: 109, inNewest: 10, stored: 109,
			sampled: true, lostAt: "stored", reason: unverifiedStageUnknown, unverified: 891,
			unverifiedReason: "891 records not read by logbench", samplerVerdict: v1alpha1.SamplerUnknown},
		"container log skipped": {skipLog: true, stored: 800, refused: 200, lostAt: "stored",
			reason: "loki refused pushes of 200 samples, retries included (rate_limited 200)"},
	} {
		t.Run(name, func(t *testing.T) {
			loki := newFakeLoki(t, true)
			clock := newClock()
			run := &nodeAgentRun{loki: startLokiRun(context.Background(), loki.client(), `{namespace="bench"}`, tag, clock)}
			if !tc.skipLog {
				run.containerLog = containerLogHolding(t, tag, tc.inLog, tc.inNewest, tc.sampled)
			}
			loki.receive(tc.stored, tc.stored, tc.refused)
			want := records.Expectation{Records: 1000}
			ended := clock.Now()
			drained, err := bench.Drain(context.Background(), run, want,
				bench.Wait{Ended: ended, Deadline: ended.Add(time.Minute), Quiet: bench.ShippedQuiet}, clock)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run.Account(context.Background(), want, drained.Delivered)
			if err != nil {
				t.Fatal(err)
			}
			if got.Delivered != tc.stored || got.Stages == nil || *got.Stages.Stored != tc.stored {
				t.Fatalf("records %+v, want %d delivered and stored", got, tc.stored)
			}
			inLog := cmp.Or(tc.containerLog, tc.inLog)
			if tc.skipLog != (got.Stages.ContainerLog == nil) || !tc.skipLog && *got.Stages.ContainerLog != inLog {
				t.Errorf("container log stage %v, want %d (skipped: %v)", got.Stages.ContainerLog, inLog, tc.skipLog)
			}
			if got.Stages.LostAt != tc.lostAt || !strings.HasPrefix(got.DropReason, tc.reason) ||
				(tc.reason == "") != (got.DropReason == "") {
				t.Errorf("lost at %q: %q\nwant %q: %q", got.Stages.LostAt, got.DropReason, tc.lostAt, tc.reason)
			}
			if got.Stages.Unverified != tc.unverified || got.Unverified != 0 ||
				!strings.Contains(got.UnverifiedReason, tc.unverifiedReason) {
				t.Errorf("unverified: stage %d, row %d, %q; want stage %d saying %q", got.Stages.Unverified,
					got.Unverified, got.UnverifiedReason, tc.unverified, tc.unverifiedReason)
			}
			if tc.sampled != (got.Sampler != nil) {
				t.Errorf("sampler check %+v, want one: %t", got.Sampler, tc.sampled)
			}
			if got.Sampler != nil && (tc.samplerVerdict != "" && got.Sampler.Verdict != tc.samplerVerdict ||
				got.Stages.LostAt == "containerLog" && got.DropReason != got.Sampler.Message) {
				t.Errorf("sampler check %+v, want verdict %q saying the drop reason %q",
					got.Sampler, tc.samplerVerdict, got.DropReason)
			}
			if got.Stages.LostAt == "containerLog" && got.Stages.UnverifiedAt == "containerLog" {
				t.Errorf("the kubelet is blamed for records logbench could not read: %+v", got.Stages)
			}
		})
	}
}
