package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// settingsMatrix is config/samples/settings-matrix.yaml as `logbench run --local --save`
// wrote it (2 cores shared with other work, PostgreSQL 15): none, statement,
// duration, both and statement-again, an A/A pair with statement, at 1, 2 and 4 clients.
func settingsMatrix(t *testing.T) *v1alpha1.LoggingBenchmark {
	t.Helper()
	b, err := ReadFile(filepath.Join("testdata", "settings-matrix.yaml"), "")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAgainstMeasuresAnAAPairAsNoise: against statement, the recorded statement-again
// rows, the same settings in the same rounds, read as within noise, statement itself has
// no overhead, and every other row is measured against statement's repeats of the same
// round: its overhead differs from the status's against the baseline.
func TestAgainstMeasuresAnAAPairAsNoise(t *testing.T) {
	b := settingsMatrix(t)
	status := map[string]v1alpha1.Result{}
	for _, row := range b.Status.Results {
		status[results.RowName(row)] = row
	}
	if err := Against(b, "statement"); err != nil {
		t.Fatal(err)
	}
	for _, row := range b.Status.Results {
		before := status[results.RowName(row)]
		switch row.Destination {
		case "statement":
			if row.OverheadPercent != nil || row.OverheadAgainst != "" {
				t.Errorf("statement/%d has an overhead against itself: %+v", row.Clients, row)
			}
			continue
		case "statement-again":
			if row.OverheadVerdict != v1alpha1.OverheadWithinNoise {
				t.Errorf("the A/A pair at %d clients reads %s (%s), want WithinNoise", row.Clients,
					row.OverheadVerdict, OverheadCell(row))
			}
		}
		if row.OverheadAgainst != "statement" || row.OverheadInterval == nil || row.OverheadInterval.Pairs != 5 {
			t.Errorf("%s/%d: against %q with %+v, want statement with 5 pairs", row.Destination, row.Clients,
				row.OverheadAgainst, row.OverheadInterval)
		}
		if before.OverheadPercent != nil && *before.OverheadPercent == *row.OverheadPercent {
			t.Errorf("%s/%d: the overhead against statement is the status's against the baseline", row.Destination,
				row.Clients)
		}
	}
	if err := Against(b, "syslog"); err == nil || !strings.Contains(err.Error(), `no results of a destination named "syslog"`) {
		t.Errorf("against a destination without results: %v", err)
	}
}

// TestHTMLShowsASettingsMatrix: each row's effective settings in a Logging column, and,
// against another destination, the overhead chart names it and leaves it out, while the
// baseline gets bars.
func TestHTMLShowsASettingsMatrix(t *testing.T) {
	b := settingsMatrix(t)
	if err := Against(b, "statement"); err != nil {
		t.Fatal(err)
	}
	doc := parseHTML(t, renderPage(t, b))
	cells := find(doc, tag("th"))
	headers := make([]string, 0, len(cells))
	for _, th := range cells {
		headers = append(headers, textContent(th))
	}
	if !strings.Contains(strings.Join(headers, "|"), "Type|Logging|Clients") {
		t.Errorf("table headers %q, want a Logging column after Type", headers)
	}
	page := textContent(doc)
	for _, want := range []string{"statement=none,duration=on", "statement=all,duration=on",
		"TPS lost against statement", "none, 1 clients:"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	chart := textContent(byID(doc, "overhead-chart"))
	if strings.Contains(chart, "statement, 1 clients") {
		t.Errorf("the overhead chart draws statement against itself: %s", chart)
	}
}
