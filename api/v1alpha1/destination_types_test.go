package v1alpha1

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDestinationTypesAreTheCRDsEnum reads the Enum marker the CRD is generated from, so
// that a type added there cannot be missing from DestinationTypes, and through it from
// the tables that say what each type means.
func TestDestinationTypesAreTheCRDsEnum(t *testing.T) {
	source, err := os.ReadFile("loggingbenchmark_types.go")
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`// \+kubebuilder:validation:Enum=(\S+)\ntype DestinationType string\n`)
	match := marker.FindSubmatch(source)
	if match == nil {
		t.Fatal("no Enum marker right above type DestinationType")
	}
	var enum []DestinationType
	for name := range strings.SplitSeq(string(match[1]), ";") {
		enum = append(enum, DestinationType(name))
	}
	if !slices.Equal(DestinationTypes, enum) {
		t.Errorf("DestinationTypes = %v, want the CRD's enum %v", DestinationTypes, enum)
	}
}

func TestEveryDestinationTypeSaysWhatItsRecordsAre(t *testing.T) {
	described := slices.Sorted(maps.Keys(typeRecords))
	if want := slices.Sorted(slices.Values(DestinationTypes)); !slices.Equal(described, want) {
		t.Errorf("typeRecords describes %v, want exactly %v", described, want)
	}
}

func TestEffectiveFormatAndShips(t *testing.T) {
	jsonShipper := &ShipperSpec{Format: FormatJSONLog}
	for _, tt := range []struct {
		destination Destination
		format      LogFormat
		ships       bool
	}{
		{Destination{Type: DestinationNone}, FormatCSVLog, false},
		{Destination{Type: DestinationStdout}, FormatCSVLog, false},
		{Destination{Type: DestinationStdout, Format: FormatJSONLog}, FormatJSONLog, false},
		{Destination{Type: DestinationStderr}, FormatStderr, false},
		{Destination{Type: DestinationCSVLog}, FormatCSVLog, false},
		{Destination{Type: DestinationJSONLog}, FormatJSONLog, false},
		{Destination{Type: DestinationFluentBitSidecar}, FormatCSVLog, true},
		{Destination{Type: DestinationFluentBitSidecar, Shipper: jsonShipper}, FormatJSONLog, true},
		{Destination{Type: DestinationLoki, Shipper: jsonShipper}, FormatJSONLog, true},
		{Destination{Type: DestinationSyslog, Shipper: jsonShipper}, FormatSyslog, true},
	} {
		d := tt.destination
		if d.EffectiveFormat() != tt.format || d.Ships() != tt.ships {
			t.Errorf("%s with format %q and shipper %v: format %s, ships %t; want %s, %t",
				d.Type, d.Format, d.Shipper, d.EffectiveFormat(), d.Ships(), tt.format, tt.ships)
		}
	}
}

// TestLosingStageOfAStdoutPipeline: a Stdout destination counted in its node agent's
// Loki has two stages; the container log loses records when it holds fewer than an exact
// expectation, Loki when it holds fewer than the container log.
func TestLosingStageOfAStdoutPipeline(t *testing.T) {
	count := func(n int64) *int64 { return &n }
	for name, tc := range map[string]struct {
		expected     *int64
		containerLog *int64
		stored       *int64
		want         string
	}{
		"nothing lost":                       {count(100), count(100), count(100), ""},
		"the agent or Loki lost them":        {count(100), count(100), count(60), "stored"},
		"the kubelet's log lost them":        {count(100), count(90), count(90), "containerLog"},
		"the kubelet's log lost the most":    {count(100), count(90), count(80), "containerLog"},
		"an estimate names no kubelet loss":  {nil, count(90), count(90), ""},
		"container log not counted":          {count(100), nil, count(70), "stored"},
		"container log not counted, no loss": {count(100), nil, count(100), ""},
		"stored holds more than the log":     {count(100), count(90), count(100), ""},
	} {
		t.Run(name, func(t *testing.T) {
			stages := RecordStages{ContainerLog: tc.containerLog, Stored: tc.stored}
			if got := stages.LosingStage(tc.expected); got != tc.want {
				t.Errorf("LosingStage = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLosingStageOfAForwardingSyslogPipeline: the records a sidecar forwarded and the
// receiver never read are lost at received, between the stages the two ends count.
func TestLosingStageOfAForwardingSyslogPipeline(t *testing.T) {
	for name, tc := range map[string]struct {
		read, forwarded, received, sent int64
		want                            string
	}{
		"nothing lost":                    {100, 100, 100, 100, ""},
		"the transport lost them":         {100, 100, 70, 70, "received"},
		"the sidecar could not send them": {100, 80, 80, 80, "forwarded"},
		"the receiver's output lost them": {100, 100, 100, 90, "sent"},
	} {
		t.Run(name, func(t *testing.T) {
			stages := RecordStages{Read: &tc.read, Forwarded: &tc.forwarded, Received: &tc.received, Sent: &tc.sent}
			if got := stages.LosingStage(&tc.read); got != tc.want {
				t.Errorf("LosingStage = %q, want %q", got, tc.want)
			}
		})
	}
}
