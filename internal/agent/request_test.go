package agent

import (
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

func TestTemplateRoundTripsIntoEachRunsRequest(t *testing.T) {
	template := Request{
		Benchmark: "b", Namespace: "ns", ClusterName: "b-csv",
		Destination: v1alpha1.Destination{Name: "csv", Type: v1alpha1.DestinationCSVLog},
	}
	encoded, err := template.Encode()
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := DecodeTemplate(encoded)
	if err != nil {
		t.Fatal(err)
	}
	run := decoded.For(4, 2)
	if run.Clients != 4 || run.Repeat != 2 || run.ClusterName != "b-csv" || run.Destination.Name != "csv" {
		t.Errorf("the run's request is %+v", run)
	}
	if decoded.Clients != 0 || decoded.Repeat != 0 {
		t.Errorf("For changed the template: %+v", decoded)
	}
}

func TestDecodeTemplateNeedsItsBenchmarkAndDestination(t *testing.T) {
	for name, value := range map[string]string{
		"not JSON":       "{",
		"no destination": `{"benchmark":"b","namespace":"ns"}`,
		"no benchmark":   `{"namespace":"ns","destination":{"name":"csv"}}`,
		"no namespace":   `{"benchmark":"b","destination":{"name":"csv"}}`,
	} {
		if _, err := DecodeTemplate(value); err == nil {
			t.Errorf("%s: %s decoded", name, value)
		}
	}
}
