//go:build shipping

package shipping_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/shipping"
	"github.com/logbench/logbench/internal/testenv"
)

// TestLokiDuplicatesAreCountedByIdentity pushes csvlog records to a real Loki, four
// to a timestamp so that pages end inside a group, then pushes some of them again at
// later timestamps, as a retried push does: Loki keeps both copies, and reading the
// run's lines back finds every line once and the records' distinct identities.
func TestLokiDuplicatesAreCountedByIdentity(t *testing.T) {
	const records, again = 2600, 150
	lokiURL := testenv.StartLoki(t, "")
	tag := fmt.Sprintf("lbtag%d", time.Now().UnixNano())
	started := time.Now()
	first := started.Add(-time.Minute)
	var values [][2]string
	for i := range records {
		values = append(values, entry(first.Add(time.Duration(i/4)*time.Microsecond), i, tag))
	}
	push(t, lokiURL, values)
	values = values[:0]
	for i := range again {
		values = append(values, entry(first.Add(time.Second+time.Duration(i)*time.Microsecond), i*17, tag))
	}
	push(t, lokiURL, values)

	const selector = `{job="logbench"}`
	client := shipping.NewLokiClient(v1alpha1.LokiSpec{URL: lokiURL}, func(string) string { return "" })
	testenv.WaitFor(t, "Loki to hold every line", 30*time.Second, func() error {
		count, err := client.CountRecords(context.Background(), selector, tag, started, time.Now())
		if err == nil && count != records+again {
			err = fmt.Errorf("loki holds %d of %d lines", count, records+again)
		}
		return err
	})
	parse, _ := shipping.IdentityOf(v1alpha1.Destination{Type: v1alpha1.DestinationLoki,
		Shipper: &v1alpha1.ShipperSpec{Format: v1alpha1.FormatCSVLog}})
	got, err := client.ReadIdentities(context.Background(), selector, tag, started, time.Now(), parse,
		shipping.MaxIdentityLines)
	if err != nil || got != (shipping.IdentityCount{Lines: records + again, Distinct: records}) {
		t.Errorf("read %+v, %v; want %d lines of %d distinct records", got, err, records+again, records)
	}
}

// entry is a csvlog record of session line i+1 whose statement holds a comma, doubled
// quotes and a newline, at time at.
func entry(at time.Time, i int, tag string) [2]string {
	stamp := at.UTC().Format("2006-01-02 15:04:05.000 UTC")
	return [2]string{fmt.Sprint(at.UnixNano()), fmt.Sprintf(`%s,"postgres","app",4242,"[local]",6650f1a2.1092,%d,`+
		`"SELECT",%s,3/1,0,LOG,00000,"statement: SELECT 'a, ""b""'`+"\n"+`  FROM t; -- %s",,,,,,,,,"pgbench",`+
		`"client backend",,0`, stamp, i+1, stamp, tag)}
}

// push sends values to Loki's push API in one stream.
func push(t *testing.T, lokiURL string, values [][2]string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"streams": []any{map[string]any{
		"stream": map[string]string{"job": "logbench"}, "values": values}}})
	if err != nil {
		t.Fatal(err)
	}
	response, err := http.Post(lokiURL+"/loki/api/v1/push", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer response.Body.Close()
	if response.StatusCode != http.StatusNoContent {
		t.Fatalf("loki answered the push %s", response.Status)
	}
}
