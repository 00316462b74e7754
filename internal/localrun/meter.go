package localrun

import (
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/procfs"
)

// memorySampling is how often the meter reads the server's memory during a run.
const memorySampling = 250 * time.Millisecond

// processMeter measures a local server from /proc: the CPU time of the postmaster's
// tree over the run, and the highest memory it held at a sample.
type processMeter struct {
	proc string
	pid  int
}

func (m processMeter) Start() (func() (v1alpha1.ServerUsage, error), error) {
	started := time.Now()
	first, err := procfs.TreeUsage(m.proc, m.pid)
	if err != nil {
		return nil, err
	}
	// The sampler alone writes these until it ends; stop reads them after that.
	peak, memoryKnown := first.PssBytes, first.MemoryKnown
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		ticker := time.NewTicker(memorySampling)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
			}
			usage, err := procfs.TreeUsage(m.proc, m.pid)
			if err != nil || !usage.MemoryKnown {
				memoryKnown = false
			}
			peak = max(peak, usage.PssBytes)
		}
	}()
	return func() (v1alpha1.ServerUsage, error) {
		close(done)
		<-sampled
		last, err := procfs.TreeUsage(m.proc, m.pid)
		if err != nil {
			return v1alpha1.ServerUsage{}, err
		}
		usage := v1alpha1.ServerUsage{
			CPUSeconds:  float64(last.CPUTicks-first.CPUTicks) / procfs.ClockTicks,
			WallSeconds: time.Since(started).Seconds(),
		}
		if memoryKnown && last.MemoryKnown {
			highest := max(peak, last.PssBytes)
			usage.PeakMemoryBytes = &highest
		}
		return usage, nil
	}, nil
}
