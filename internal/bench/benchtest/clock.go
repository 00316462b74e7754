// Package benchtest holds test doubles of package bench shared by the tests of its
// users.
package benchtest

import "time"

// SteppingClock is a bench.Clock that advances by the wait whenever a drain waits, so
// that tests of drains never sleep.
type SteppingClock struct{ Time time.Time }

func (c *SteppingClock) Now() time.Time { return c.Time }

func (c *SteppingClock) After(d time.Duration) <-chan time.Time {
	c.Time = c.Time.Add(d)
	ready := make(chan time.Time, 1)
	ready <- c.Time
	return ready
}
