package report

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/html"
	"k8s.io/utils/ptr"

	"github.com/logbench/logbench/api/v1alpha1"
)

func parseHTML(t *testing.T, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("the page does not parse: %v", err)
	}
	return doc
}

func renderPage(t *testing.T, b *v1alpha1.LoggingBenchmark) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := Render(&out, FormatHTML, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// find returns the elements under n, n included, for which match holds, in document order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var found []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			found = append(found, d)
		}
	}
	return found
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func byID(doc *html.Node, id string) *html.Node {
	found := find(doc, func(n *html.Node) bool { v, _ := attr(n, "id"); return v == id })
	if len(found) != 1 {
		return nil
	}
	return found[0]
}

func textContent(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

var (
	numberPattern = regexp.MustCompile(`[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?`)
	// numericAttributes are the SVG attributes holding one coordinate or length.
	numericAttributes = []string{"x", "y", "x1", "x2", "y1", "y2", "cx", "cy", "r", "width", "height", "dx", "dy"}
)

// checkCoordinates fails on any SVG coordinate that is not a finite number and on
// negative lengths, which browsers silently drop.
func checkCoordinates(t *testing.T, doc *html.Node) {
	t.Helper()
	for _, svg := range find(doc, tag("svg")) {
		for n := range svg.Descendants() {
			for _, a := range n.Attr {
				switch {
				case slices.Contains(numericAttributes, a.Key):
					v, err := strconv.ParseFloat(a.Val, 64)
					if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("<%s %s=%q>: not a finite number", n.Data, a.Key, a.Val)
					}
					if (a.Key == "width" || a.Key == "height" || a.Key == "r") && v < 0 {
						t.Errorf("<%s %s=%q>: negative length", n.Data, a.Key, a.Val)
					}
				case a.Key == "d" || a.Key == "points" || a.Key == "viewBox" || a.Key == "transform":
					if strings.Contains(a.Val, "NaN") || strings.Contains(a.Val, "Inf") {
						t.Errorf("<%s %s=%q>: not finite", n.Data, a.Key, a.Val)
					}
				}
			}
		}
	}
}

// legend returns the destinations the legend of a figure lists.
func legend(t *testing.T, figure *html.Node) []string {
	t.Helper()
	var names []string
	for _, li := range find(figure, tag("li")) {
		if name, ok := attr(li, "data-destination"); ok {
			names = append(names, name)
			if strings.TrimSpace(textContent(li)) != name {
				t.Errorf("legend entry %q shows %q", name, textContent(li))
			}
		}
	}
	return names
}

func destinationNames(b *v1alpha1.LoggingBenchmark, withBaseline bool) []string {
	var names []string
	for _, d := range b.Spec.EffectiveDestinations() {
		if withBaseline || d.Type != v1alpha1.DestinationNone {
			names = append(names, d.Name)
		}
	}
	return names
}

func TestHTMLStructure(t *testing.T) {
	for name, b := range edgeCases() {
		t.Run(name, func(t *testing.T) {
			page := renderPage(t, b)
			doc := parseHTML(t, page)
			checkCoordinates(t, doc)
			checkSelfContained(t, doc)

			tps := byID(doc, "tps-chart")
			if tps == nil {
				t.Fatal("no TPS chart")
			}
			if got, want := legend(t, tps), destinationNames(b, true); !slices.Equal(got, want) {
				t.Errorf("TPS legend = %v, want every destination %v", got, want)
			}
			checkTPSLines(t, b, tps)

			logged := destinationNames(b, false)
			for _, id := range []string{"overhead-chart", "records-chart"} {
				if figure := byID(doc, id); figure != nil {
					if got := legend(t, figure); !slices.Equal(got[:min(len(got), len(logged))], logged) {
						t.Errorf("%s legend = %v, want the logged destinations %v first", id, got, logged)
					}
				}
			}
			if bytes.Contains(page, []byte("<script>alert")) {
				t.Error("an error message's markup reached the page unescaped")
			}
		})
	}
}

// checkTPSLines checks that each destination with results draws a marker per result
// and a non-empty line where two client counts in a row succeeded.
func checkTPSLines(t *testing.T, b *v1alpha1.LoggingBenchmark, figure *html.Node) {
	t.Helper()
	for _, s := range seriesOf(b) {
		groups := find(figure, func(n *html.Node) bool {
			v, _ := attr(n, "data-destination")
			return n.Data == "g" && v == s.Name
		})
		if len(groups) != 1 {
			t.Errorf("destination %s has %d series in the TPS chart, want 1", s.Name, len(groups))
			continue
		}
		points, joined, wantLine := 0, 0, false
		for _, c := range clientCounts(b) {
			if _, ok := s.row(c); ok {
				points++
				joined++
				wantLine = wantLine || joined >= 2
			} else {
				joined = 0
			}
		}
		markers := find(groups[0], func(n *html.Node) bool { r, _ := attr(n, "r"); return n.Data == "circle" && r == "4.5" })
		if len(markers) != points {
			t.Errorf("destination %s: %d markers in the TPS chart, want %d", s.Name, len(markers), points)
		}
		var lines []string
		for _, p := range find(groups[0], tag("path")) {
			if class, _ := attr(p, "class"); class != "error-bar" {
				d, _ := attr(p, "d")
				lines = append(lines, d)
			}
		}
		if wantLine && (len(lines) != 1 || len(numberPattern.FindAllString(lines[0], -1)) < 4) {
			t.Errorf("destination %s: TPS line paths %q, want one joining at least two points", s.Name, lines)
		}
	}
}

// checkSelfContained fails on scripts and on anything the page would fetch.
func checkSelfContained(t *testing.T, doc *html.Node) {
	t.Helper()
	for _, n := range find(doc, func(*html.Node) bool { return true }) {
		if n.Data == "script" || n.Data == "link" || n.Data == "img" || n.Data == "iframe" {
			t.Errorf("the page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			if a.Key == "src" || a.Key == "href" || strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s %s=%q>: the page must not load or run anything", n.Data, a.Key, a.Val)
			}
		}
	}
	for _, style := range find(doc, tag("style")) {
		if strings.Contains(textContent(style), "url(") || strings.Contains(textContent(style), "@import") {
			t.Error("the stylesheet fetches something")
		}
	}
}

func TestHTMLShowsFailuresAsText(t *testing.T) {
	doc := parseHTML(t, renderPage(t, fullBenchmark()))
	pres := find(doc, tag("pre"))
	errors := make([]string, 0, len(pres))
	for _, pre := range pres {
		errors = append(errors, textContent(pre))
	}
	if !slices.Contains(errors, hostileError) || !slices.Contains(errors, "cluster not ready") {
		t.Errorf("failed repeats shown as %q, want the full messages including %q", errors, hostileError)
	}
	// A repeat measured on its second attempt shows the first attempt's whole error.
	retried := "connecting to the server: the primary restarted\nmore"
	if !slices.Contains(errors, retried) {
		t.Errorf("failed attempts shown as %q, want %q", errors, retried)
	}
	strongs := find(doc, tag("strong"))
	runs := make([]string, 0, len(strongs))
	for _, strong := range strongs {
		runs = append(runs, textContent(strong))
	}
	if measured := "jsonlog, 16 clients, repeat 1, measured on attempt 2"; !slices.Contains(runs, measured) {
		t.Errorf("repeats with failed attempts named %q, want %q", runs, measured)
	}
}

func TestHTMLSaysWhyRecordsWereDropped(t *testing.T) {
	doc := parseHTML(t, renderPage(t, fullBenchmark()))
	items := find(doc, tag("li"))
	notes := make([]string, 0, len(items))
	for _, item := range items {
		notes = append(notes, textContent(item))
	}
	want := "csvlog/4 dropped records: repeat 1: " +
		"loki refused pushes of 11002 samples, retries included (rate_limited 11002)"
	if !slices.Contains(notes, want) {
		t.Errorf("notes %q, want %q", notes, want)
	}
}

func TestHTMLShowsTheDrainOfShippingDestinations(t *testing.T) {
	fluent := v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar}
	shipped := repeat(1000, 1000, 700)
	late, dropped := int64(250), int64(50)
	shipped.Records.ArrivedLate, shipped.Records.Dropped = late, &dropped
	shipped.DrainEnd = v1alpha1.DrainQuiet
	shipped.DrainCurve = []v1alpha1.DrainPoint{
		{AfterSeconds: 0, Delivered: 500}, {AfterSeconds: 1, Delivered: 600}, {AfterSeconds: 10.4, Delivered: 700},
	}
	runs := map[run]v1alpha1.RepeatResult{
		{"baseline", 1, 1}: repeat(2000, 0, 0), {"fluent", 1, 1}: shipped,
	}
	doc := parseHTML(t, renderPage(t, benchmark([]v1alpha1.Destination{fluent}, true, []int32{1}, runs)))
	tds := find(doc, tag("td"))
	cells := make([]string, 0, len(tds))
	for _, cell := range tds {
		cells = append(cells, textContent(cell))
	}
	for _, want := range []string{
		"fluent, 1 clients, repeat 1", "Quiet", "0.0 s: 50.0% · 1.0 s: 60.0% · 10.4 s: 70.0%", "700 (+250 late)",
	} {
		if !slices.Contains(cells, want) {
			t.Errorf("cells %q, want %q", cells, want)
		}
	}
}

func TestHTMLRefusesFiguresThatAreNotMeasurements(t *testing.T) {
	tests := map[string]func(*v1alpha1.Result){
		"infinite TPS":      func(r *v1alpha1.Result) { r.TPS = math.Inf(1) },
		"NaN stddev":        func(r *v1alpha1.Result) { r.TPSStdDev = math.NaN() },
		"absurd overhead":   func(r *v1alpha1.Result) { o := 1e300; r.OverheadPercent = &o },
		"negative delivery": func(r *v1alpha1.Result) { r.Records.Delivered = -1 },
	}
	for name, corrupt := range tests {
		t.Run(name, func(t *testing.T) {
			b := fullBenchmark()
			corrupt(&b.Status.Results[3])
			err := Render(&bytes.Buffer{}, FormatHTML, b)
			refused := err != nil &&
				(strings.Contains(err.Error(), "not a measurement") || strings.Contains(err.Error(), "not measurements"))
			if !refused {
				t.Fatalf("Render error = %v, want a refusal", err)
			}
		})
	}
}

// TestOverheadChartDrawsIntervals: the one row with 3 repeats paired with the baseline's
// gets a whisker; the others have too few pairs for an interval.
func TestOverheadChartDrawsIntervals(t *testing.T) {
	doc := parseHTML(t, renderPage(t, fullBenchmark()))
	whiskers := find(byID(doc, "overhead-chart"), func(n *html.Node) bool {
		class, _ := attr(n, "class")
		return n.Data == "path" && class == "error-bar"
	})
	if len(whiskers) != 1 {
		t.Errorf("%d intervals drawn in the overhead chart, want 1 (csvlog at 1 client)", len(whiskers))
	}
}

func TestHTMLExplainsTheOverheadIntervals(t *testing.T) {
	doc := parseHTML(t, renderPage(t, fullBenchmark()))
	notes := find(doc, func(n *html.Node) bool {
		class, _ := attr(n, "class")
		return n.Data == "p" && class == "explain overhead-note"
	})
	texts := make([]string, 0, len(notes))
	for _, note := range notes {
		texts = append(texts, textContent(note))
	}
	if !slices.ContainsFunc(texts, func(text string) bool {
		return strings.HasPrefix(text, "overhead: median over the repeats paired with the baseline's; [low, high]")
	}) {
		t.Errorf("notes under the table %q, want the one that explains the intervals", texts)
	}
}

func TestHTMLMarksTheKneeOfARamp(t *testing.T) {
	benchmark := fullBenchmark()
	benchmark.Spec.Workload.Ramp = &v1alpha1.RampSpec{Start: 1, Factor: 4, Max: 4,
		StopWhen: v1alpha1.RampStopConditions{TPSGainBelowPercent: ptr.To[int32](10)}}
	rows := benchmark.Status.Results
	for i := range rows {
		rows[i].Knee = rows[i].Destination == "csvlog" && rows[i].Clients == 1
		if rows[i].Destination == "csvlog" && rows[i].Clients == 4 {
			rows[i].RampStop = "TPS went from 1000 at 1 clients to 1050 at 4 (+5.0%), a gain below 10%"
		}
	}
	page := string(renderPage(t, benchmark))
	for _, want := range []string{
		`class="knee"`, ">knee</text>", "(knee: the highest client count within the ramp",
		"^ csvlog: knee at 1 clients; the ramp stopped at 4: TPS went from 1000",
		"clients ramped from 1, ×4, up to 4 (stopping at TPS gain below 10%)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
