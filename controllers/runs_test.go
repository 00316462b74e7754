package controllers

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/logbench/logbench/api/v1alpha1"
)

func TestResultFromTermination(t *testing.T) {
	const jobFailure = "Job failed (BackoffLimitExceeded): Job has reached the specified backoff limit"
	tests := []struct {
		name    string
		message string
		failure string
		want    v1alpha1.RepeatResult
	}{
		{"completed with a result", `{"repeat":1,"tps":812.5}`, "", v1alpha1.RepeatResult{Repeat: 1, TPS: 812.5}},
		{"completed without pod", "", "", v1alpha1.RepeatResult{Error: "the agent completed but its pod, holding the result, is gone"}},
		{"completed with garbage", "oops", "", v1alpha1.RepeatResult{Error: "the agent completed with an unreadable result: oops"}},
		{"failed with the agent's error", `{"repeat":1,"error":"connecting to c: refused"}`, jobFailure, v1alpha1.RepeatResult{Error: "connecting to c: refused"}},
		{"failed with a crash message", "panic: boom\n", jobFailure, v1alpha1.RepeatResult{Error: "panic: boom"}},
		{"failed without message", "", jobFailure, v1alpha1.RepeatResult{Error: jobFailure}},
		{"failed with a result but no error", `{"tps":1}`, jobFailure, v1alpha1.RepeatResult{Error: jobFailure}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resultFromTermination(tt.message, tt.failure); got != tt.want {
				t.Errorf("resultFromTermination(%q, %q) = %+v, want %+v", tt.message, tt.failure, got, tt.want)
			}
		})
	}
}

// FuzzResultFromTermination feeds arbitrary termination messages: a failed run always
// gets a bounded, valid error.
func FuzzResultFromTermination(f *testing.F) {
	f.Add(`{"tps":1}`, "")
	f.Add("", "Job failed")
	f.Add(strings.Repeat("é", 2000), "Job failed")
	f.Fuzz(func(t *testing.T, message, failure string) {
		result := resultFromTermination(message, failure)
		if failure != "" && result.Error == "" {
			t.Fatalf("failed Job %q with message %q got no error", failure, message)
		}
		if len(result.Error) > maxErrorLength+len("…") {
			t.Fatalf("error of %d bytes exceeds the bound", len(result.Error))
		}
		if utf8.ValidString(message) && utf8.ValidString(failure) && !utf8.ValidString(result.Error) {
			t.Fatalf("truncation split a character: %q", result.Error)
		}
	})
}

func TestJobName(t *testing.T) {
	run := func(destination string, clients, repeat int32) plannedRun {
		return plannedRun{Destination: v1alpha1.Destination{Name: destination}, Clients: clients, Repeat: repeat}
	}
	long := strings.Repeat("b", 29)
	tests := []struct {
		name      string
		benchmark string
		run       plannedRun
		want      string
	}{
		{"short", "bench", run("csv", 4, 2), "bench-csv-c4-r2"},
		{"at the limit", long, run("destination-of-20-ch", 1, 1), long + "-destination-of-20-ch-c1-r1"},
		{"hashed", long + "-tail", run("destination-of-20-ch", 1000, 100), long + "-tail-destination-of-20-c-308c9195"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jobName(tt.benchmark, tt.run)
			if got != tt.want || len(got) > maxJobNameLength {
				t.Errorf("jobName = %q (%d characters), want %q", got, len(got), tt.want)
			}
		})
	}
}

func TestRunKeyFromLabelsRoundTrip(t *testing.T) {
	run := plannedRun{Destination: v1alpha1.Destination{Name: "csv"}, Clients: 8, Repeat: 3}
	got, err := runKeyFromLabels(runLabels("bench", run))
	if err != nil || got != run.key() {
		t.Fatalf("runKeyFromLabels = %+v, %v; want %+v", got, err, run.key())
	}
	if _, err := runKeyFromLabels(map[string]string{LabelDestination: "csv", LabelClients: "x"}); err == nil {
		t.Fatal("labels without a valid run were accepted")
	}
}
