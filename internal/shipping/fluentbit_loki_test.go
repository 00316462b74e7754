//go:build shipping

package shipping

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/testenv"
	"github.com/logbench/logbench/internal/workload"
)

// TestFluentBitShipsEveryRecordOfPostgreSQLToLoki ships a real PostgreSQL's csvlog and
// jsonlog through the real Fluent Bit, with the generated Loki output, into the
// project's Loki (make loki): the agent's count query finds exactly the tagged records
// of the file, and reading them back finds each record's identity once. It needs bin/loki, so it runs with make test-shipping.
func TestFluentBitShipsEveryRecordOfPostgreSQLToLoki(t *testing.T) {
	lokiURL := testenv.StartLoki(t, "")
	for _, format := range []v1alpha1.LogFormat{v1alpha1.FormatCSVLog, v1alpha1.FormatJSONLog} {
		t.Run(string(format), func(t *testing.T) {
			loki := v1alpha1.LokiSpec{URL: lokiURL}
			target := Target{Namespace: "ns", Benchmark: "bench", Destination: v1alpha1.Destination{
				Name: "fluent-" + string(format), Type: v1alpha1.DestinationLoki, Loki: &loki,
				Shipper: &v1alpha1.ShipperSpec{Format: format}}}
			run := startFluentBitRun(t, target)
			started := time.Now()
			tag := workload.NewTag(target.Destination.Name, 1, 1, "0123456789ab")
			written := run.writeTaggedRecords(t, tag)

			client := NewLokiClient(loki, func(string) string { return "" })
			testenv.WaitFor(t, "Loki to hold every record", 60*time.Second, func() error {
				count, err := client.CountRecords(context.Background(), target.LokiSelector(), tag, started, time.Now())
				if err != nil {
					return err
				}
				if count != written {
					return fmt.Errorf("Loki holds %d of %d records", count, written)
				}
				return nil
			})
			// Fluent Bit stores each record wrapped as {"log": ...}: read back, each holds
			// its own identity.
			parse, _ := IdentityOf(target.Destination)
			read, err := client.ReadIdentities(context.Background(), target.LokiSelector(), tag, started, time.Now(),
				parse, MaxIdentityLines)
			if err != nil || read != (IdentityCount{Lines: written, Distinct: written}) {
				t.Errorf("read back %+v, %v; want %d distinct records", read, err, written)
			}
			if shipped := run.read(t).Total(); shipped.Dropped != 0 {
				t.Errorf("Fluent Bit dropped %d records", shipped.Dropped)
			}
		})
	}
}
