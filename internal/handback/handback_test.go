package handback

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/utils/ptr"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/benchstatus"
)

func TestFromTermination(t *testing.T) {
	const jobFailure = "Job failed (BackoffLimitExceeded): Job has reached the specified backoff limit"
	tests := []struct {
		name    string
		message string
		failure string
		want    v1alpha1.RepeatResult
	}{
		{"completed with a result", `{"repeat":1,"tps":812.5}`, "", v1alpha1.RepeatResult{Repeat: 1, TPS: 812.5}},
		{
			"completed without pod",
			"",
			"",
			v1alpha1.RepeatResult{Error: "the agent completed but its pod, holding the result, is gone"},
		},
		{
			"completed with garbage",
			"oops",
			"",
			v1alpha1.RepeatResult{Error: "the agent completed with an unreadable result: oops"},
		},
		{
			"failed with the agent's error",
			`{"repeat":1,"error":"connecting to c: refused"}`,
			jobFailure,
			v1alpha1.RepeatResult{Error: "connecting to c: refused"},
		},
		{"failed with a crash message", "panic: boom\n", jobFailure, v1alpha1.RepeatResult{Error: "panic: boom"}},
		{"failed without message", "", jobFailure, v1alpha1.RepeatResult{Error: jobFailure}},
		{"failed with a result but no error", `{"tps":1}`, jobFailure, v1alpha1.RepeatResult{Error: jobFailure}},
		{
			"completed with how the drain ended",
			`{"repeat":1,"tps":1,"records":{"expected":10,"delivered":6,"arrivedLate":2,"dropped":2},` +
				`"drainEnd":"Quiet","drainCurve":[{"afterSeconds":0,"delivered":5},{"afterSeconds":10.2,"delivered":6}]}`,
			"",
			v1alpha1.RepeatResult{
				Repeat:     1,
				TPS:        1,
				Records:    v1alpha1.Records{Expected: 10, Delivered: 6, ArrivedLate: 2, Dropped: ptr.To[int64](2)},
				DrainEnd:   v1alpha1.DrainQuiet,
				DrainCurve: []v1alpha1.DrainPoint{{AfterSeconds: 0, Delivered: 5}, {AfterSeconds: 10.2, Delivered: 6}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FromTermination(tt.message, tt.failure); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FromTermination(%q, %q) = %+v, want %+v", tt.message, tt.failure, got, tt.want)
			}
		})
	}
}

// FuzzFromTermination feeds arbitrary termination messages: a failed run always
// gets a bounded, valid error.
func FuzzFromTermination(f *testing.F) {
	f.Add(`{"tps":1}`, "")
	f.Add("", "Job failed")
	f.Add(strings.Repeat("é", 2000), "Job failed")
	f.Fuzz(func(t *testing.T, message, failure string) {
		result := FromTermination(message, failure)
		if failure != "" && result.Error == "" {
			t.Fatalf("failed Job %q with message %q got no error", failure, message)
		}
		if len(result.Error) > benchstatus.MaxMessageLength+len("…") {
			t.Fatalf("error of %d bytes exceeds the bound", len(result.Error))
		}
		if utf8.ValidString(message) && utf8.ValidString(failure) && !utf8.ValidString(result.Error) {
			t.Fatalf("truncation split a character: %q", result.Error)
		}
	})
}
