package shipping

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Metrics pages of the shippers' HTTP servers.
const (
	fluentBitMetricsPath = "/api/v2/metrics/prometheus"
	collectorMetricsPath = "/metrics"
)

// ShipperScraper reads a running shipper's counters from its metrics page.
type ShipperScraper struct {
	// URL of the metrics page.
	URL  string
	Kind v1alpha1.ShipperKind
	HTTP *http.Client
}

// Scraper returns the scraper of the destination's shipper in the instance pod at podIP,
// on the port the pod patch declares.
func (t Target) Scraper(podIP string, httpClient *http.Client) ShipperScraper {
	kind := t.Destination.EffectiveShipper().Kind
	port, path := FluentBitMetricsPort, fluentBitMetricsPath
	if kind == v1alpha1.ShipperOpenTelemetryCollector {
		port, path = CollectorMetricsPort, collectorMetricsPath
	}
	return ShipperScraper{
		URL:  "http://" + net.JoinHostPort(podIP, strconv.Itoa(port)) + path,
		Kind: kind,
		HTTP: httpClient,
	}
}

// Read scrapes the shipper's cumulative counters.
func (s ShipperScraper) Read(ctx context.Context) (ShipperMetrics, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return ShipperMetrics{}, err
	}
	body, err := fetch(s.HTTP, request, "the shipper's metrics endpoint "+s.URL)
	if err != nil {
		return ShipperMetrics{}, err
	}
	if s.Kind == v1alpha1.ShipperOpenTelemetryCollector {
		return ParseCollectorMetrics(bytes.NewReader(body))
	}
	return ParseFluentBitMetrics(bytes.NewReader(body))
}
