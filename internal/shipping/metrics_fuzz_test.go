package shipping

import (
	"strings"
	"testing"
)

// FuzzParseShipperMetrics checks that any page either fails to parse or yields counts
// that are never negative, and that a page's share since itself is zero.
func FuzzParseShipperMetrics(f *testing.F) {
	f.Add(fluentBitPage)
	f.Add(collectorPage)
	f.Add("fluentbit_output_proc_records_total{name=\"a\"} 1e3\nfluentbit_output_proc_records_total{name=\"b\"} 2\n")
	f.Fuzz(func(t *testing.T, page string) {
		for _, parse := range []func(string) (ShipperMetrics, error){parseFluentBitString, parseCollectorString} {
			metrics, err := parse(page)
			if err != nil {
				continue
			}
			total := metrics.Total()
			if metrics.Read < 0 || total.Sent < 0 || total.Dropped < 0 || total.Retried < 0 {
				t.Fatalf("negative counts %+v from %q", metrics, page)
			}
			run, err := metrics.Since(metrics)
			if err != nil || run.Read != 0 || run.Total() != (OutputCounters{}) {
				t.Fatalf("share of %+v since itself: %+v, %v", metrics, run, err)
			}
		}
		if loki, err := ParseLokiMetrics(strings.NewReader(page), ""); err == nil {
			if loki.RestartedSince(loki) {
				t.Fatalf("%+v restarted since itself", loki)
			}
			for reason, n := range loki.Discards {
				if n < 0 {
					t.Fatalf("negative discards %d for %q", n, reason)
				}
			}
		}
	})
}
