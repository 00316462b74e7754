package shipping

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"

	"github.com/logbench/logbench/api/v1alpha1"
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
	shipper := shipperFor(kind)
	return ShipperScraper{
		URL:  "http://" + net.JoinHostPort(podIP, strconv.Itoa(shipper.MetricsPort())) + shipper.MetricsPath(),
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
	return shipperFor(s.Kind).ParseMetrics(bytes.NewReader(body))
}
