package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench/benchtest"
	"github.com/logbench/logbench/internal/records"
)

// markedStream is a stream that lost some of the run's records, watched by marks.
type markedStream struct {
	*StreamMarks
	delivered int64
}

func (s markedStream) Delivered(context.Context) (int64, error) { return s.delivered, nil }

// streamLine is a record as CloudNativePG's instance manager prints it.
func streamLine(message string) string {
	return `{"level":"info","ts":"2026-01-02T03:00:00.1Z","logger":"postgres","msg":"record",` +
		`"record":{"error_severity":"LOG","message":"` + message + `"}}` + "\n"
}

// TestStreamMarksEndTheDrainOnceTheStreamCaughtUp: a stream that dropped records drains
// once a marker the server logged after the run reaches it, the first one the sampler
// dropped as well, not after the quiet period; a stream no marker reaches ends quiet.
func TestStreamMarksEndTheDrainOnceTheStreamCaughtUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		// reached is which marker first reaches the stream; 0 for none.
		reached int
		want    v1alpha1.DrainEnd
		within  time.Duration
	}{
		{name: "the second marker reaches the stream", reached: 2, want: v1alpha1.DrainSettled, within: time.Second},
		{name: "no marker reaches the stream", want: v1alpha1.DrainQuiet, within: 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var marks *StreamMarks
			logged := 0
			mark := func(_ context.Context, id string) error {
				logged++
				// Another drain's marker, then this one split where a read may split it.
				if _, err := marks.Write([]byte(streamLine(markerPrefix + "0ther" + id))); err != nil {
					return err
				}
				if logged != tc.reached {
					return nil
				}
				line := streamLine(markerPrefix + id)
				cut := len(line) - len(id)
				if _, err := marks.Write([]byte(line[:cut])); err != nil {
					return err
				}
				_, err := marks.Write([]byte(line[cut:]))
				return err
			}
			var err error
			if marks, err = NewStreamMarks(mark, noSessions); err != nil {
				t.Fatal(err)
			}
			clock := benchtest.NewSteppingClock(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
			ended := clock.Now()
			wait := Wait{Ended: ended, Deadline: ended.Add(time.Minute), Quiet: 2 * time.Second}
			drained, err := Drain(context.Background(), markedStream{marks, 109}, records.Expectation{Records: 1000},
				wait, clock)
			if err != nil {
				t.Fatal(err)
			}
			if took := clock.Now().Sub(ended); drained.End != tc.want || took > tc.within {
				t.Errorf("drain ended %s after %s, want %s within %s", drained.End, took, tc.want, tc.within)
			}
			if tc.reached > 0 && logged != tc.reached {
				t.Errorf("the server logged %d markers, want none after the one that reached the stream (%d)",
					logged, tc.reached)
			}
		})
	}
}

// TestStreamMarksReportTheServersRefusal: InFlight passes on a marker the server
// refused; the drain then cannot tell, and ends quiet.
func TestStreamMarksReportTheServersRefusal(t *testing.T) {
	refused := errors.New("connection refused")
	marks, err := NewStreamMarks(func(context.Context, string) error { return refused }, noSessions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := marks.InFlight(context.Background()); !errors.Is(err, refused) {
		t.Errorf("InFlight = %v, want the server's refusal", err)
	}
}

// TestStreamMarksWaitForTheRunsSessions: no marker is logged while a session of the run
// remains, which may still log its disconnection after the marker.
func TestStreamMarksWaitForTheRunsSessions(t *testing.T) {
	remaining := int64(2)
	logged := 0
	marks, err := NewStreamMarks(func(context.Context, string) error { logged++; return nil },
		func(context.Context) (int64, error) { return remaining, nil })
	if err != nil {
		t.Fatal(err)
	}
	for remaining >= 0 {
		if _, err := marks.InFlight(context.Background()); err == nil {
			t.Fatal("InFlight told nothing was in flight before any marker reached the stream")
		}
		if want := map[bool]int{true: 0, false: 1}[remaining > 0]; logged != want {
			t.Fatalf("%d sessions left: %d markers logged, want %d", remaining, logged, want)
		}
		remaining--
	}
}

func noSessions(context.Context) (int64, error) { return 0, nil }
