package localrun

import (
	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/procfs"
)

// processMeter measures a local server from /proc: the CPU time of the postmaster's
// tree over the run, and the highest memory it held at a sample. Local runs ship
// nothing, so there is no shipper to measure.
type processMeter struct {
	proc string
	pid  int
}

func (m processMeter) Start() (bench.Measurement, error) {
	window, err := meter.Open(func() (map[string]procfs.Usage, error) {
		usage, err := procfs.TreeUsage(m.proc, m.pid)
		return map[string]procfs.Usage{meter.Server: usage}, err
	})
	return treeMeasurement{window}, err
}

type treeMeasurement struct{ window *meter.Window }

func (t treeMeasurement) Server() (v1alpha1.ProcessUsage, error) {
	usage, err := t.window.Read()
	return usage[meter.Server], err
}

func (treeMeasurement) Shipper() (*v1alpha1.ProcessUsage, error) { return nil, nil }

func (treeMeasurement) Receiver() (*v1alpha1.ProcessUsage, error) { return nil, nil }

func (t treeMeasurement) End() { t.window.Close() }
