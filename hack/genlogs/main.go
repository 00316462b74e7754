// Command genlogs writes a deterministic PostgreSQL 15 log of the shape pgbench -S -M
// prepared produces under log_statement=all, in one of the formats logbench counts,
// for timing the record counters against grep on big files.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	format := flag.String("format", "csvlog", "stderr, csvlog, jsonlog or containerlog")
	size := flag.Int64("size", 200<<20, "bytes to write, at least")
	tag := flag.String("tag", "lbtag-bench", "application name of one in two sessions")
	flag.Parse()
	write, ok := writers[*format]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown format %q: use stderr, csvlog, jsonlog or containerlog\n", *format)
		os.Exit(2)
	}
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	counted := &countingWriter{w: out}
	random := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for i := 0; counted.n < *size; i++ {
		r := record{
			time:    start.Add(time.Duration(i) * 37 * time.Microsecond),
			pid:     4000 + i%8,
			line:    i/8 + 1,
			app:     []string{*tag, "other"}[i%8/4],
			message: "execute P_0: SELECT abalance FROM pgbench_accounts WHERE aid = $1;",
			detail:  "parameters: $1 = '" + strconv.Itoa(random.IntN(1_000_000)+1) + "'",
		}
		if i%1000 == 999 {
			// Now and then a multi-line statement, as psql sends them.
			r.message, r.detail = "statement: select count(*)\n  from pgbench_branches\n where bid > 0;", ""
		}
		write(counted, r)
	}
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type record struct {
	time                 time.Time
	pid, line            int
	app, message, detail string
}

type countingWriter struct {
	w *bufio.Writer
	n int64
}

func (c *countingWriter) WriteString(s string) {
	n, _ := c.w.WriteString(s)
	c.n += int64(n)
}

var writers = map[string]func(*countingWriter, record){
	"stderr":       writeStderr,
	"csvlog":       writeCSV,
	"jsonlog":      writeJSON,
	"containerlog": writeContainer,
}

const logTime = "2006-01-02 15:04:05.000 MST"

// The sessions' user and database, as pgbench on a fresh cluster has them.
const (
	userName     = "postgres"
	databaseName = "postgres"
)

func (r record) prefix() string {
	return fmt.Sprintf("%s [%d] postgres@postgres %s ", r.time.Format(logTime), r.pid, r.app)
}

func stderrLines(r record) []string {
	lines := []string{r.prefix() + "LOG:  " + strings.ReplaceAll(r.message, "\n", "\n\t")}
	if r.detail != "" {
		lines = append(lines, r.prefix()+"DETAIL:  "+r.detail)
	}
	return strings.Split(strings.Join(lines, "\n"), "\n")
}

func writeStderr(w *countingWriter, r record) {
	for _, line := range stderrLines(r) {
		w.WriteString(line + "\n")
	}
}

func csvQuote(s string) string {
	if s == "" {
		return ""
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func writeCSV(w *countingWriter, r record) {
	session := fmt.Sprintf("6741a0c0.%x", r.pid)
	w.WriteString(fmt.Sprintf("%s,%s,%s,%d,\"[local]\",%s,%d,\"SELECT\",2026-11-23 10:00:00 UTC,3/%d,0,LOG,00000,"+
		"%s,%s,,,,,,,,%s,\"client backend\",,0\n", r.time.Format(logTime), csvQuote(userName), csvQuote(databaseName),
		r.pid, session, r.line, r.line, csvQuote(r.message), csvQuote(r.detail), csvQuote(r.app)))
}

func jsonLine(w *countingWriter, v any) {
	line, _ := json.Marshal(v)
	w.WriteString(string(line) + "\n")
}

// jsonlogRecord has PostgreSQL 15's jsonlog keys in its order.
type jsonlogRecord struct {
	Timestamp       string `json:"timestamp"`
	User            string `json:"user"`
	DBName          string `json:"dbname"`
	PID             int    `json:"pid"`
	RemoteHost      string `json:"remote_host"`
	SessionID       string `json:"session_id"`
	LineNum         int    `json:"line_num"`
	PS              string `json:"ps"`
	SessionStart    string `json:"session_start"`
	VXID            string `json:"vxid"`
	TXID            int    `json:"txid"`
	ErrorSeverity   string `json:"error_severity"`
	Message         string `json:"message"`
	Detail          string `json:"detail,omitempty"`
	ApplicationName string `json:"application_name"`
	BackendType     string `json:"backend_type"`
	QueryID         int    `json:"query_id"`
}

func jsonRecord(r record) jsonlogRecord {
	return jsonlogRecord{
		Timestamp: r.time.Format(logTime), User: userName, DBName: databaseName, PID: r.pid,
		RemoteHost: "[local]", SessionID: fmt.Sprintf("6741a0c0.%x", r.pid), LineNum: r.line,
		PS: "SELECT", SessionStart: "2026-11-23 10:00:00 UTC", VXID: fmt.Sprintf("3/%d", r.line),
		ErrorSeverity: "LOG", Message: r.message, Detail: r.detail, ApplicationName: r.app,
		BackendType: "client backend",
	}
}

// zapLine is a line of CloudNativePG's instance manager, keys in zap's order.
type zapLine struct {
	Level      string            `json:"level"`
	TS         string            `json:"ts"`
	Logger     string            `json:"logger"`
	Msg        string            `json:"msg"`
	LoggingPod string            `json:"logging_pod"`
	Record     map[string]string `json:"record,omitempty"`
}

func writeJSON(w *countingWriter, r record) { jsonLine(w, jsonRecord(r)) }

// writeContainer writes the record as CloudNativePG's instance manager prints a
// csvlog record, with one of its own lines now and then.
func writeContainer(w *countingWriter, r record) {
	ts := r.time.Format(time.RFC3339Nano)
	jsonLine(w, zapLine{Level: "info", TS: ts, Logger: "postgres", Msg: "record", LoggingPod: "lb-1",
		Record: map[string]string{"log_time": r.time.Format(logTime), "user_name": userName, "database_name": databaseName,
			"process_id": strconv.Itoa(r.pid), "connection_from": "[local]", "session_line_num": strconv.Itoa(r.line),
			"command_tag": "SELECT", "error_severity": "LOG", "sql_state_code": "00000", "message": r.message,
			"detail": r.detail, "application_name": r.app, "backend_type": "client backend", "query_id": "0"}})
	if r.line%500 == 0 {
		jsonLine(w, zapLine{Level: "info", TS: ts, Logger: "instance-manager", Msg: "Checking for free disk space",
			LoggingPod: "lb-1"})
	}
}
