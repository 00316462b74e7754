// Package meter measures what a run's processes spend: the CPU time they use between
// the start and the end of a measurement, and the most memory they hold at once,
// sampled meanwhile. Local runs measure their server's process tree with it; in a
// cluster, a sidecar of the instance pod measures the pod's containers (Pod) and the
// agent reads it over HTTP (Client).
package meter

import (
	"fmt"
	"sync"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/procfs"
)

// The roles a measurement tells apart.
const (
	// Server is PostgreSQL: its processes locally, its container in a pod.
	Server = "server"
	// Shipper is the log shipper sidecar of a shipping destination's pod.
	Shipper = "shipper"
	// Receiver is the pod of a forwarding Syslog destination's receiver.
	Receiver = "receiver"
)

// Sampling is how often a window reads the memory of the processes it measures.
const Sampling = 250 * time.Millisecond

// Sample reads the usage of each role it finds at one moment.
type Sample func() (map[string]procfs.Usage, error)

// Window is one measurement: CPU time from its opening, memory at its highest sample.
type Window struct {
	sample Sample
	opened time.Time
	first  map[string]procfs.Usage

	mu       sync.Mutex
	peak     map[string]int64
	unknown  map[string]bool
	sampling error
	done     chan struct{}
	sampled  chan struct{}
	closing  sync.Once
}

// Open starts a window and samples its roles every Sampling until Close.
func Open(sample Sample) (*Window, error) {
	first, err := sample()
	if err != nil {
		return nil, err
	}
	w := &Window{sample: sample, opened: time.Now(), first: first, peak: map[string]int64{},
		unknown: map[string]bool{}, done: make(chan struct{}), sampled: make(chan struct{})}
	w.record(first)
	go w.run()
	return w, nil
}

func (w *Window) run() {
	defer close(w.sampled)
	ticker := time.NewTicker(Sampling)
	defer ticker.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-ticker.C:
		}
		usage, err := w.sample()
		w.mu.Lock()
		if err != nil {
			w.sampling = err
		}
		w.mu.Unlock()
		w.record(usage)
	}
}

// record keeps the highest memory of each role; a role whose memory could not be read
// at one sample has no known peak.
func (w *Window) record(usage map[string]procfs.Usage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for role, u := range usage {
		w.peak[role] = max(w.peak[role], u.MemoryBytes)
		if !u.MemoryKnown {
			w.unknown[role] = true
		}
	}
}

// Read measures each role from the opening until now; the window stays open. A role
// that was not there at the opening is left out.
func (w *Window) Read() (map[string]v1alpha1.ProcessUsage, error) {
	now, err := w.sample()
	if err != nil {
		return nil, err
	}
	w.record(now)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sampling != nil {
		return nil, fmt.Errorf("sampling: %w", w.sampling)
	}
	wall := time.Since(w.opened).Seconds()
	usage := map[string]v1alpha1.ProcessUsage{}
	for role, first := range w.first {
		last, found := now[role]
		if !found {
			return nil, fmt.Errorf("the %s's processes ended during the measurement", role)
		}
		measured := v1alpha1.ProcessUsage{WallSeconds: wall}
		// Exited processes whose parent waited for them stay counted (procfs.Usage);
		// others take their CPU time with them, which never makes the sum negative.
		if first.CPUKnown && last.CPUKnown {
			measured.CPUSeconds = new(float64(last.CPUTicks-min(first.CPUTicks, last.CPUTicks)) / procfs.ClockTicks)
		}
		if !w.unknown[role] {
			measured.PeakMemoryBytes = new(w.peak[role])
		}
		usage[role] = measured
	}
	return usage, nil
}

// Close stops the sampling; closing again does nothing.
func (w *Window) Close() {
	w.closing.Do(func() { close(w.done) })
	<-w.sampled
}
