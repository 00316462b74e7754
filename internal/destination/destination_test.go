package destination

import (
	"maps"
	"slices"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/shipping"
)

// TestEveryDestinationTypeHasABehaviour fails for a type of the CRD's enum (see
// v1alpha1.DestinationTypes) that the table lacks, and for an entry of no such type.
func TestEveryDestinationTypeHasABehaviour(t *testing.T) {
	inTable := slices.Sorted(maps.Keys(behaviours))
	if want := slices.Sorted(slices.Values(v1alpha1.DestinationTypes)); !slices.Equal(inTable, want) {
		t.Errorf("the table holds %v, want exactly %v", inTable, want)
	}
}

// TestShipperCountsTheTypesThatShip keeps the table in step with the API's Ships.
func TestShipperCountsTheTypesThatShip(t *testing.T) {
	for _, destinationType := range v1alpha1.DestinationTypes {
		d := v1alpha1.Destination{Type: destinationType}
		counted := behaviours[destinationType].Counted
		if shipper := counted == Shipper || counted == SyslogReceiver; shipper != d.Ships() {
			t.Errorf("%s: counted by its shipper %t, ships %t", destinationType, shipper, d.Ships())
		}
	}
}

func TestForRefusesAnUnknownType(t *testing.T) {
	if _, err := For(v1alpha1.Destination{Type: "Journald"}); err == nil {
		t.Error("For accepted type Journald")
	}
}

func TestPodRoutes(t *testing.T) {
	const dir = "/controller/logbench"
	files := func(logDestination string) map[string]string {
		return map[string]string{"log_destination": logDestination, "log_directory": dir, "log_filename": podLogName}
	}
	fluentBit := v1alpha1.Destination{Type: v1alpha1.DestinationFluentBitSidecar}
	jsonShipper := &v1alpha1.ShipperSpec{Format: v1alpha1.FormatJSONLog}
	loki := v1alpha1.Destination{Type: v1alpha1.DestinationLoki, Shipper: jsonShipper}
	for _, tt := range []struct {
		destination v1alpha1.Destination
		settings    map[string]string
		format      records.Format
	}{
		{v1alpha1.Destination{Type: v1alpha1.DestinationNone}, nil, records.FormatContainerLog},
		{v1alpha1.Destination{Type: v1alpha1.DestinationStdout}, map[string]string{"log_destination": "csvlog"},
			records.FormatContainerLog},
		{v1alpha1.Destination{Type: v1alpha1.DestinationStdout, Format: v1alpha1.FormatStderr},
			map[string]string{"log_destination": "stderr"}, records.FormatContainerLog},
		{v1alpha1.Destination{Type: v1alpha1.DestinationStderr}, files("stderr"), records.FormatStderr},
		{v1alpha1.Destination{Type: v1alpha1.DestinationCSVLog}, files("csvlog"), records.FormatCSVLog},
		{v1alpha1.Destination{Type: v1alpha1.DestinationJSONLog}, files("jsonlog"), records.FormatJSONLog},
		{fluentBit, shipping.ServerSettings(fluentBit), records.FormatCSVLog},
		{loki, shipping.ServerSettings(loki), records.FormatJSONLog},
	} {
		route, err := For(tt.destination)
		if err != nil {
			t.Fatal(err)
		}
		settings, format := route.PodSettings(dir), route.PodFormat()
		if !maps.Equal(settings, tt.settings) || format != tt.format {
			t.Errorf("%+v in a pod: settings %v, counted as %v; want %v, %v",
				tt.destination, settings, format, tt.settings, tt.format)
		}
	}
}

func TestSyslogRoutes(t *testing.T) {
	syslog := func(facility, ident, sequence, split string) map[string]string {
		return map[string]string{"log_destination": "syslog", "syslog_facility": facility, "syslog_ident": ident,
			"syslog_sequence_numbers": sequence, "syslog_split_messages": split}
	}
	configured := v1alpha1.Destination{Type: v1alpha1.DestinationSyslog, Syslog: &v1alpha1.SyslogSpec{
		Facility: "LOCAL5", Ident: "pg", SequenceNumbers: new(false), SplitMessages: new(true)}}
	for _, tt := range []struct {
		destination v1alpha1.Destination
		settings    map[string]string
		messages    records.SyslogSettings
	}{
		{v1alpha1.Destination{Type: v1alpha1.DestinationSyslog}, syslog("local0", "postgres", "on", "on"),
			records.SyslogSettings{SequenceNumbers: true, SplitMessages: true}},
		{configured, syslog("local5", "pg", "off", "on"), records.SyslogSettings{SplitMessages: true}},
	} {
		route, err := For(tt.destination)
		if err != nil {
			t.Fatal(err)
		}
		local := maps.Clone(tt.settings)
		local["logging_collector"] = "off"
		if pod := route.PodSettings("/unused"); !maps.Equal(pod, tt.settings) {
			t.Errorf("%+v in a pod: settings %v, want %v", tt.destination.Syslog, pod, tt.settings)
		}
		if settings := route.LocalSettings(); !route.RunsLocally() || !maps.Equal(settings, local) {
			t.Errorf("%+v locally: runs %t, settings %v; want true, %v", tt.destination.Syslog, route.RunsLocally(), settings, local)
		}
		if route.SyslogSettings() != tt.messages {
			t.Errorf("%+v: messages shaped by %+v, want %+v", tt.destination.Syslog, route.SyslogSettings(), tt.messages)
		}
	}
}

func TestLocalRoutes(t *testing.T) {
	containerLog := map[string]string{"logging_collector": "off", "log_destination": "stderr"}
	files := func(logDestination string) map[string]string {
		return map[string]string{"logging_collector": "on", "log_destination": logDestination, "log_filename": localLogName}
	}
	for _, tt := range []struct {
		destination v1alpha1.Destination
		settings    map[string]string
		format      records.Format
	}{
		{v1alpha1.Destination{Type: v1alpha1.DestinationNone}, containerLog, records.FormatStderr},
		{v1alpha1.Destination{Type: v1alpha1.DestinationStdout, Format: v1alpha1.FormatJSONLog}, containerLog,
			records.FormatStderr},
		{v1alpha1.Destination{Type: v1alpha1.DestinationStderr}, files("stderr"), records.FormatStderr},
		{v1alpha1.Destination{Type: v1alpha1.DestinationCSVLog}, files("csvlog"), records.FormatCSVLog},
		{v1alpha1.Destination{Type: v1alpha1.DestinationJSONLog}, files("jsonlog"), records.FormatJSONLog},
	} {
		route, err := For(tt.destination)
		if err != nil {
			t.Fatal(err)
		}
		settings, format := route.LocalSettings(), route.LocalFormat()
		if !route.RunsLocally() || !maps.Equal(settings, tt.settings) || format != tt.format {
			t.Errorf("%+v locally: runs %t, settings %v, counted as %v; want true, %v, %v",
				tt.destination, route.RunsLocally(), settings, format, tt.settings, tt.format)
		}
	}
	for _, shipped := range []v1alpha1.DestinationType{v1alpha1.DestinationFluentBitSidecar, v1alpha1.DestinationLoki} {
		if route, _ := For(v1alpha1.Destination{Type: shipped}); route.RunsLocally() {
			t.Errorf("%s runs locally, without the pod its sidecar needs", shipped)
		}
	}
}
