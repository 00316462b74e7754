package records

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// countWhole counts input written at once.
func countWhole(f Format, tag string, input []byte) int64 {
	c := NewCounter(f, tag)
	_, _ = c.Write(input)
	return c.Count()
}

// countInChunks counts input written size bytes at a time.
func countInChunks(f Format, tag string, input []byte, size int) int64 {
	c := NewCounter(f, tag)
	for start := 0; start < len(input); start += size {
		_, _ = c.Write(input[start:min(start+size, len(input))])
	}
	return c.Count()
}

// assertCount checks the count of input written at once and with every chunk size.
func assertCount(t *testing.T, f Format, tag string, input []byte, want int64) {
	t.Helper()
	if got := countWhole(f, tag, input); got != want {
		t.Fatalf("%v: counted %d records with %q in one write, want %d", f, got, tag, want)
	}
	for size := 1; size < len(input); size++ {
		if got := countInChunks(f, tag, input, size); got != want {
			t.Fatalf("%v: counted %d records with %q in chunks of %d bytes, want %d", f, got, tag, size, want)
		}
	}
}

// csvOracle counts the rows of a valid csvlog with a field containing tag, with
// encoding/csv.
func csvOracle(input []byte, tag string) (int64, error) {
	r := csv.NewReader(bytes.NewReader(input))
	r.FieldsPerRecord = -1
	var count int64
	for {
		row, err := r.Read()
		if errors.Is(err, io.EOF) {
			return count, nil
		}
		if err != nil {
			return 0, err
		}
		for _, field := range row {
			if bytes.Contains([]byte(field), []byte(tag)) {
				count++
				break
			}
		}
	}
}

const (
	prefix = "2026-11-23 10:43:03.996 UTC [26341] postgres@postgres "
	zap    = `{"level":"info","ts":"2026-11-23T10:43:03.996Z","logger":"postgres","msg":`
	source = `,"source":"/controller/log/postgres","logging_pod":"lb-1"}`
)

func TestCounter(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		tag    string
		input  string
		want   int64
	}{
		{"stderr empty input", FormatStderr, "lbtag", "", 0},
		{"stderr one record per line", FormatStderr, "lbtag",
			prefix + "lbtag LOG:  statement: select 1\n" + prefix + "other LOG:  statement: select 2\n" + prefix + "lbtag LOG:  statement: select 3\n", 2},
		{"stderr DETAIL and STATEMENT belong to the record", FormatStderr, "lbtag",
			prefix + "lbtag ERROR:  duplicate key\n" + prefix + "lbtag DETAIL:  Key (id)=(1) already exists.\n" + prefix + "lbtag STATEMENT:  insert into t values (1)\n", 1},
		{"stderr every continuation label", FormatStderr, "lbtag",
			prefix + "lbtag ERROR:  boom\n" + prefix + "lbtag DETAIL:  d\n\tmore\n" + prefix + "lbtag HINT:  h\n" + prefix + "lbtag QUERY:  q\n" + prefix + "lbtag CONTEXT:  c\n" + prefix + "lbtag LOCATION:  l\n" + prefix + "lbtag STATEMENT:  s\n", 1},
		{"stderr multi-line statement", FormatStderr, "lbtag",
			prefix + "app LOG:  statement: select 1\n\t+ 2 -- lbtag\n\t-- lbtag again\n" + prefix + "app LOG:  statement: select 2\n", 1},
		{"stderr tag in another record's continuation", FormatStderr, "lbtag",
			prefix + "lbtag LOG:  statement: select 1\n" + prefix + "app LOG:  statement: select 2\n\t/* lbtag */\n", 2},
		{"stderr no trailing newline", FormatStderr, "lbtag", prefix + "lbtag LOG:  statement: select 1", 1},
		{"stderr line without label starts a record", FormatStderr, "lbtag",
			prefix + "lbtag LOG:  statement: select 1\nlbtag: not a record of PostgreSQL\n", 2},
		{"stderr verbose error code", FormatStderr, "lbtag",
			prefix + "lbtag ERROR:  23505: duplicate key\n" + prefix + "lbtag LOCATION:  _bt_check_unique, nbtinsert.c:664\n", 1},
		{"stderr empty tag counts every record", FormatStderr, "",
			prefix + "a LOG:  x\n" + prefix + "a DETAIL:  y\n" + prefix + "b LOG:  z\n", 2},

		{"csvlog empty input", FormatCSVLog, "lbtag", "", 0},
		{"csvlog quoted newline and tag in a continuation line", FormatCSVLog, "lbtag",
			"2026-11-23 10:43:03.996 UTC,\"postgres\",\"postgres\",1,\"[local]\",a.1,1,\"idle\",,3/1,0,LOG,00000,\"statement: select 1\n+ 2 -- lbtag\n -- lbtag\",,,,,,,,\"app\",\"client backend\",,0\n" +
				"2026-11-23 10:43:03.997 UTC,\"postgres\",\"postgres\",1,\"[local]\",a.1,2,\"idle\",,3/2,0,LOG,00000,\"statement: select 2\",,,,,,,,\"app\",\"client backend\",,0\n", 1},
		{"csvlog doubled quotes", FormatCSVLog, "lbtag",
			"a,\"say \"\"hi\n\"\" lbtag\",x\nb,\"\"\"\",lbtag\nc,\"\",d\n", 2},
		{"csvlog tag in a later record only", FormatCSVLog, "lbtag",
			"a,\"x\ny\"\nb,\"lbtag\n\"\n", 1},
		{"csvlog no trailing newline", FormatCSVLog, "lbtag", "a,lbtag", 1},

		{"jsonlog one record per line", FormatJSONLog, "lbtag",
			`{"application_name":"lbtag","message":"statement: select 1\nlbtag"}` + "\n" + `{"application_name":"app"}` + "\n" + `{"message":"lbtag"}`, 2},

		{"container csvlog records", FormatContainerLog, "lbtag",
			zap + `"record","logging_pod":"lb-1","record":{"application_name":"lbtag","message":"statement: select 1\nlbtag"}}` + "\n" +
				zap + `"record","logging_pod":"lb-1","record":{"application_name":"app"}}` + "\n", 1},
		{"container wrapped stderr lines form one record", FormatContainerLog, "lbtag",
			zap + `"` + prefix + `lbtag ERROR:  boom"` + source + "\n" +
				zap + `"` + prefix + `lbtag DETAIL:  detail"` + source + "\n" +
				zap + `"\tlbtag continued"` + source + "\n" +
				zap + `"` + prefix + `lbtag LOG:  statement: select 1"` + source + "\n", 2},
		{"container other loggers interleaved are ignored", FormatContainerLog, "lbtag",
			zap + `"` + prefix + `lbtag ERROR:  boom"` + source + "\n" +
				`{"level":"info","ts":"2026-11-23T10:43:03.996Z","logger":"instance-manager","msg":"lbtag seen"}` + "\n" +
				zap + `"` + prefix + `lbtag STATEMENT:  select 1"` + source + "\n", 1},
		{"container record lines between stderr lines", FormatContainerLog, "lbtag",
			zap + `"` + prefix + `lbtag ERROR:  boom"` + source + "\n" +
				zap + `"record","record":{"application_name":"lbtag"}}` + "\n" +
				zap + `"` + prefix + `lbtag STATEMENT:  select 1"` + source + "\n", 2},
		// CloudNativePG's logpipe/pgaudit.go: the message moves, parsed, into "audit".
		{"container pgaudit records", FormatContainerLog, "lbtag",
			`{"level":"info","ts":"2026-11-23T10:43:03.996Z","logger":"pgaudit","msg":"record","logging_pod":"lb-1",` +
				`"record":{"application_name":"lbtag","audit":{"audit_type":"SESSION","class":"READ"}}}` + "\n" +
				`{"level":"info","ts":"2026-11-23T10:43:03.996Z","logger":"pgaudit","msg":"record",` +
				`"record":{"application_name":"app","audit":{"statement":"select 1"}}}` + "\n", 1},
		{"container jsonlog passed through", FormatContainerLog, "lbtag",
			`{"timestamp":"2026-11-23 10:43:03.996 UTC","application_name":"lbtag"}` + "\n" + `{"timestamp":"x","application_name":"app"}` + "\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertCount(t, tt.format, tt.tag, []byte(tt.input), tt.want)
		})
	}
}

// TestCounterSplitTag feeds a record split at every byte of its tag.
func TestCounterSplitTag(t *testing.T) {
	input := []byte(prefix + "app LOG:  statement: select 1 -- lbtag-0123456789\n")
	tagAt := bytes.Index(input, []byte("lbtag"))
	for cut := tagAt; cut <= tagAt+len("lbtag-0123456789"); cut++ {
		c := NewCounter(FormatStderr, "lbtag-0123456789")
		_, _ = c.Write(input[:cut])
		_, _ = c.Write(input[cut:])
		if c.Count() != 1 {
			t.Errorf("record cut at byte %d: counted %d, want 1", cut, c.Count())
		}
	}
}

// TestCounterPostgres15 counts records of a real PostgreSQL 15 server that logged the
// same records to stderr, csvlog and jsonlog at once: every format must agree with
// encoding/csv on the csvlog (one row a record), and so must the container log the
// instance manager would print from them.
func TestCounterPostgres15(t *testing.T) {
	stderrLog := readTestdata(t, "pg15-stderr.log")
	csvLog := readTestdata(t, "pg15.csv")
	jsonLog := readTestdata(t, "pg15.json")
	containerLog := containerLogFrom(t, stderrLog, csvLog, jsonLog)
	for _, tag := range []string{"lbtag", "lbtag-bench", "lbtag-simple", "lbtag-app", "lbtag-in-text", "pgbench_accounts", "nosuchtable", "already exists", "starting PostgreSQL"} {
		want, err := csvOracle(csvLog, tag)
		if err != nil {
			t.Fatal(err)
		}
		if want == 0 {
			t.Fatalf("tag %q is in no record of the test data", tag)
		}
		for _, f := range []struct {
			format Format
			input  []byte
			want   int64
		}{
			{FormatStderr, stderrLog, want},
			{FormatCSVLog, csvLog, want},
			{FormatJSONLog, jsonLog, want},
			{FormatContainerLog, containerLog, 3 * want},
		} {
			for _, size := range []int{1, 7, 4096, len(f.input)} {
				if got := countInChunks(f.format, tag, f.input, size); got != f.want {
					t.Errorf("%v, tag %q, chunks of %d: counted %d, want %d", f.format, tag, size, got, f.want)
				}
			}
		}
	}
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// csvlogFields are the names CloudNativePG gives the csvlog fields of PostgreSQL 15.
var csvlogFields = []string{"log_time", "user_name", "database_name", "process_id", "connection_from",
	"session_id", "session_line_num", "command_tag", "session_start_time", "virtual_transaction_id",
	"transaction_id", "error_severity", "sql_state_code", "message", "detail", "hint", "internal_query",
	"internal_query_pos", "context", "query", "query_pos", "location", "application_name",
	"backend_type", "leader_pid", "query_id"}

// containerLogFrom prints what CloudNativePG's instance manager would print on stdout
// if PostgreSQL wrote the three logs to its FIFOs, one line of each in turn, with a
// line of its own between them.
func containerLogFrom(t testing.TB, stderrLog, csvLog, jsonLog []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	emit := func(v any) {
		if err := encoder.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	type zapLine struct {
		Level      string            `json:"level"`
		TS         string            `json:"ts"`
		Logger     string            `json:"logger"`
		Msg        string            `json:"msg"`
		LoggingPod string            `json:"logging_pod"`
		Source     string            `json:"source,omitempty"`
		Record     map[string]string `json:"record,omitempty"`
	}
	rows := csv.NewReader(bytes.NewReader(csvLog))
	rows.FieldsPerRecord = -1
	stderrLines := bytes.SplitAfter(stderrLog, []byte("\n"))
	jsonLines := bytes.SplitAfter(jsonLog, []byte("\n"))
	for i := 0; ; i++ {
		row, err := rows.Read()
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if err == nil {
			record := map[string]string{}
			for j, field := range row {
				record[csvlogFields[j]] = field
			}
			emit(
				zapLine{
					Level:      "info",
					TS:         "2026-11-23T10:43:03Z",
					Logger:     "postgres",
					Msg:        "record",
					LoggingPod: "lb-1",
					Record:     record,
				},
			)
		}
		if i < len(stderrLines) && len(stderrLines[i]) > 0 {
			line := string(bytes.TrimSuffix(stderrLines[i], []byte("\n")))
			emit(
				zapLine{
					Level:      "info",
					TS:         "2026-11-23T10:43:03Z",
					Logger:     "postgres",
					Msg:        line,
					LoggingPod: "lb-1",
					Source:     "/controller/log/postgres",
				},
			)
		}
		emit(
			zapLine{
				Level:      "info",
				TS:         "2026-11-23T10:43:03Z",
				Logger:     "instance-manager",
				Msg:        "lbtag-bench lbtag-simple pgbench_accounts nosuchtable",
				LoggingPod: "lb-1",
			},
		)
		if i < len(jsonLines) {
			out.Write(jsonLines[i])
		}
		if err != nil && i >= len(stderrLines) && i >= len(jsonLines) {
			return out.Bytes()
		}
	}
}
