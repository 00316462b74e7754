package shipping

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
)

// csvlogRecord is a csvlog record of PostgreSQL 15 whose message holds commas, doubled
// quotes and newlines, one of them followed by what looks like a record's start.
const csvlogRecord = `2026-11-26 15:00:00.123 UTC,"postgres","bench",1234,"[local]",6565a1b2.4d2,37,"SELECT",` +
	`2026-11-26 15:00:00 UTC,3/4,0,LOG,00000,"statement: SELECT 'a,b', ""x"" /* lb_loki_c1_r1_abc */,` + "\n" +
	`2026-11-26 15:00:00.124 UTC,""y"",1,2",,,,,,,,,"lb_loki_c1_r1_abc","client backend",,0`

const jsonlogRecord = `{"timestamp":"2026-11-26 15:00:00.123 UTC","user":"postgres","dbname":"bench","pid":1234,` +
	`"session_id":"6565a1b2.4d2","line_num":37,"ps":"SELECT","error_severity":"LOG",` +
	`"message":"statement: SELECT 1 /* lb_loki_c1_r1_abc */","application_name":"lb_loki_c1_r1_abc"}`

func TestIdentityOfTheStoredRecords(t *testing.T) {
	want := RecordIdentity{Session: "6565a1b2.4d2", Line: 37}
	fluentBitLine := func(record string) string { return `{"log":` + strconv.Quote(record) + `}` }
	for _, tc := range []struct {
		name   string
		format v1alpha1.LogFormat
		line   string
	}{
		{"csvlog as the collector stores it", v1alpha1.FormatCSVLog, csvlogRecord},
		{"csvlog as Fluent Bit stores it", v1alpha1.FormatCSVLog, fluentBitLine(csvlogRecord)},
		{"csvlog with its newline", v1alpha1.FormatCSVLog, csvlogRecord + "\n"},
		{"jsonlog as the collector stores it", v1alpha1.FormatJSONLog, jsonlogRecord},
		{"jsonlog as Fluent Bit stores it", v1alpha1.FormatJSONLog, fluentBitLine(jsonlogRecord)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse, ok := IdentityOf(lokiDestination(tc.format))
			if !ok {
				t.Fatalf("no identity for %s", tc.format)
			}
			got, err := parse(tc.line)
			if err != nil || got != want {
				t.Errorf("identity %+v, %v; want %+v", got, err, want)
			}
		})
	}
}

func TestIdentityRefusesWhatIsNotOneRecord(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format v1alpha1.LogFormat
		line   string
	}{
		{"two csvlog records", v1alpha1.FormatCSVLog, csvlogRecord + "\n" + csvlogRecord},
		{"an unclosed quote", v1alpha1.FormatCSVLog, strings.TrimSuffix(csvlogRecord, `,,0`) + `"`},
		{"too few csvlog fields", v1alpha1.FormatCSVLog, `2026-11-26 15:00:00.123 UTC,"postgres","bench",1234`},
		{"no session line number", v1alpha1.FormatCSVLog, strings.Replace(csvlogRecord, ",37,", ",,", 1)},
		{"a stderr line", v1alpha1.FormatCSVLog, "2026-11-26 15:00:00.123 UTC [1234] LOG:  statement: SELECT 1"},
		{"jsonlog without line_num", v1alpha1.FormatJSONLog, strings.Replace(jsonlogRecord, `"line_num":37,`, "", 1)},
		{"a session id that is a number", v1alpha1.FormatJSONLog, strings.Replace(jsonlogRecord, `"6565a1b2.4d2"`, "1", 1)},
		{"not json", v1alpha1.FormatJSONLog, csvlogRecord},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parse, _ := IdentityOf(lokiDestination(tc.format))
			if got, err := parse(tc.line); err == nil {
				t.Errorf("identity %+v of %q, want an error", got, tc.line)
			}
		})
	}
}

func TestNoIdentityWithoutSessionLineNumbers(t *testing.T) {
	syslog := lokiDestination(v1alpha1.FormatCSVLog)
	syslog.Type = v1alpha1.DestinationSyslog
	for _, d := range []v1alpha1.Destination{lokiDestination(v1alpha1.FormatStderr), syslog} {
		if _, ok := IdentityOf(d); ok {
			t.Errorf("destination %s of %s has an identity", d.Type, d.EffectiveFormat())
		}
	}
}

func lokiDestination(format v1alpha1.LogFormat) v1alpha1.Destination {
	return v1alpha1.Destination{Name: "loki", Type: v1alpha1.DestinationLoki,
		Loki: &v1alpha1.LokiSpec{URL: "http://loki"}, Shipper: &v1alpha1.ShipperSpec{Format: format}}
}

// FuzzCSVLogIdentity checks that any text either is refused or yields a session and a
// positive line number, and that quoting it as csvlog does gives the same identity back.
func FuzzCSVLogIdentity(f *testing.F) {
	f.Add(csvlogRecord)
	f.Add(`a,b,c,d,e,"s,""1""` + "\n" + `",7`)
	f.Add("a,b,c,d,e,s,1\r\n\n")
	f.Fuzz(func(t *testing.T, record string) {
		id, err := CSVLogIdentity(record)
		if err != nil {
			return
		}
		if id.Session == "" || id.Line < 1 {
			t.Fatalf("identity %+v of %q", id, record)
		}
		quoted := fmt.Sprintf(`x,,,1,,"%s",%d,""`, strings.ReplaceAll(id.Session, `"`, `""`), id.Line)
		if again, err := CSVLogIdentity(quoted); err != nil || again != id {
			t.Fatalf("identity %+v of %q, %v; want %+v", again, quoted, err, id)
		}
	})
}

// pagedLoki answers query_range as Loki does: the first limit entries from start on,
// oldest first, grouped by stream.
type pagedLoki struct {
	entries []timedEntry
	starts  []int64
}

func (l *pagedLoki) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	start, _ := strconv.ParseInt(q.Get("start"), 10, 64)
	limit, _ := strconv.Atoi(q.Get("limit"))
	if r.URL.Path != "/loki/api/v1/query_range" || q.Get("direction") != "forward" || limit < 1 {
		http.Error(w, "not a forward log query", http.StatusBadRequest)
		return
	}
	l.starts = append(l.starts, start)
	var page []timedEntry
	for _, e := range l.entries {
		if e.nanos >= start && len(page) < limit {
			page = append(page, e)
		}
	}
	streams := map[string][]string{}
	for _, e := range page {
		streams[e.stream] = append(streams[e.stream], fmt.Sprintf(`[%q,%s]`, strconv.FormatInt(e.nanos, 10),
			strconv.Quote(e.line)))
	}
	var result []string
	for _, stream := range slices.Sorted(maps.Keys(streams)) {
		result = append(result, fmt.Sprintf(`{"stream":%s,"values":[%s]}`, stream, strings.Join(streams[stream], ",")))
	}
	fmt.Fprintf(w, `{"status":"success","data":{"resultType":"streams","result":[%s]}}`, strings.Join(result, ","))
}

// TestReadIdentitiesPagesByTimestamp: pages end inside groups of entries sharing a
// timestamp, in two streams; every entry is read exactly once, and the records stored
// twice are counted once.
func TestReadIdentitiesPagesByTimestamp(t *testing.T) {
	const records, twice = 2500, 40
	base := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	loki := &pagedLoki{}
	for i := range records + twice {
		line := i
		if i >= records {
			line = (i - records) * 50 // a retried push stores an earlier record again, later
		}
		stream := fmt.Sprintf(`{"pod":"p%d"}`, i%2)
		// Seven entries share each timestamp, so pages of 1,000 end inside a group.
		loki.entries = append(loki.entries, timedEntry{
			storedEntry{stream, strings.Replace(csvlogRecord, ",37,", fmt.Sprintf(",%d,", line+1), 1)},
			base.Add(time.Duration(i/7) * time.Millisecond).UnixNano(),
		})
	}
	server := httptest.NewServer(http.HandlerFunc(loki.serve))
	t.Cleanup(server.Close)
	parse, _ := IdentityOf(lokiDestination(v1alpha1.FormatCSVLog))
	client := &LokiClient{URL: server.URL}
	got, err := client.ReadIdentities(context.Background(), `{job="logbench"}`, "lb_loki_c1_r1_abc",
		base, base.Add(time.Minute), parse, MaxIdentityLines)
	if err != nil || got != (IdentityCount{Lines: records + twice, Distinct: records}) {
		t.Fatalf("read %+v, %v; want %d lines of %d records", got, err, records+twice, records)
	}
	if len(loki.starts) != 3 || loki.starts[1] != base.Add(142*time.Millisecond).UnixNano() {
		t.Errorf("pages started at %v, want 3 pages, the second at the 1,000th entry's timestamp", loki.starts)
	}

	if _, err := client.ReadIdentities(context.Background(), `{job="logbench"}`, "lb_loki_c1_r1_abc",
		base, base.Add(time.Minute), parse, records); err == nil {
		t.Error("read more lines than the cap without an error")
	}
}

// TestReadIdentitiesRefusesWhatItCannotPage: more entries at one timestamp than a page
// holds cannot be paged by timestamp; a line that is no record has no identity.
func TestReadIdentitiesRefusesWhatItCannotPage(t *testing.T) {
	base := time.Date(2026, 11, 26, 15, 0, 0, 0, time.UTC)
	sameTime := &pagedLoki{}
	for i := range identityPage + 1 {
		sameTime.entries = append(sameTime.entries, timedEntry{
			storedEntry{`{"pod":"p"}`, strings.Replace(csvlogRecord, ",37,", fmt.Sprintf(",%d,", i+1), 1)},
			base.UnixNano(),
		})
	}
	garbled := &pagedLoki{entries: []timedEntry{{storedEntry{`{"pod":"p"}`, "garbled"}, base.UnixNano()}}}
	parse, _ := IdentityOf(lokiDestination(v1alpha1.FormatCSVLog))
	for name, loki := range map[string]*pagedLoki{"one timestamp": sameTime, "garbled": garbled} {
		server := httptest.NewServer(http.HandlerFunc(loki.serve))
		got, err := (&LokiClient{URL: server.URL}).ReadIdentities(context.Background(), `{job="logbench"}`, "tag",
			base, base.Add(time.Minute), parse, MaxIdentityLines)
		server.Close()
		if err == nil {
			t.Errorf("%s: read %+v, want an error", name, got)
		}
	}
}
