// Package benchtest holds test doubles of package bench shared by the tests of its
// users.
package benchtest

import (
	"sync"
	"time"
)

// SteppingClock is a bench.Clock that advances by the wait whenever a drain waits, so
// that tests of drains never sleep, and by what a test double spends, so that a count
// can take time as a real one does. It is safe for use by a test server's goroutines.
type SteppingClock struct {
	mu   sync.Mutex
	time time.Time
}

// NewSteppingClock returns a clock that starts at start.
func NewSteppingClock(start time.Time) *SteppingClock {
	return &SteppingClock{time: start}
}

func (c *SteppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.time
}

func (c *SteppingClock) After(d time.Duration) <-chan time.Time {
	ready := make(chan time.Time, 1)
	ready <- c.Spend(d)
	return ready
}

// Spend moves the clock on by d, as a count that takes d does, and returns the new time.
func (c *SteppingClock) Spend(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.time = c.time.Add(d)
	return c.time
}
