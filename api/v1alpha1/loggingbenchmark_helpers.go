package v1alpha1

// BaselineName is the name of the destination added when spec.baseline.enabled is true
// and no destination of type None is listed.
const BaselineName = "baseline"

// EffectiveDestinations returns the destinations to measure: the automatic baseline
// first (when it applies), then the listed ones in order.
func (s *LoggingBenchmarkSpec) EffectiveDestinations() []Destination {
	if _, listed := s.BaselineDestination(); listed || !s.Baseline.Enabled {
		return append([]Destination(nil), s.Destinations...)
	}
	return append([]Destination{{Name: BaselineName, Type: DestinationNone}}, s.Destinations...)
}

// BaselineDestination returns the name of the listed destination of type None.
func (s *LoggingBenchmarkSpec) BaselineDestination() (string, bool) {
	for _, d := range s.Destinations {
		if d.Type == DestinationNone {
			return d.Name, true
		}
	}
	return "", false
}

// RunsTotal is the number of pgbench executions the benchmark needs.
func (s *LoggingBenchmarkSpec) RunsTotal() int32 {
	return int32(len(s.EffectiveDestinations())*len(s.Workload.Clients)) * s.Workload.Repeats
}

// EffectiveFormat is the record format the destination carries.
func (d Destination) EffectiveFormat() LogFormat {
	switch d.Type {
	case DestinationStderr:
		return FormatStderr
	case DestinationJSONLog:
		return FormatJSONLog
	case DestinationStdout:
		if d.Format != "" {
			return d.Format
		}
	}
	return FormatCSVLog
}
