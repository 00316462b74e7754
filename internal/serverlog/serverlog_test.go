package serverlog

import (
	"strings"
	"testing"
)

// refusedLog is the end of an initdb pod's log, as CloudNativePG's instance manager
// writes it, whose server refused a parameter's value.
const refusedLog = `{"level":"info","logger":"pg_ctl","msg":"2026-11-27 10:00:01.123 UTC [27] LOG:  invalid value for parameter \"shared_buffers\": \"all\""}
{"level":"info","logger":"pg_ctl","msg":"2026-11-27 10:00:01.124 UTC [27] FATAL:  configuration file \"/pgdata/postgresql.conf\" contains errors"}
{"level":"error","msg":"Error while bootstrapping data directory","error":"exit status 1"}
`

func TestStopped(t *testing.T) {
	tests := []struct {
		name        string
		log         string
		want        string
		wantRefused bool
	}{
		{"a refused parameter, with the line that names it", refusedLog,
			`LOG: invalid value for parameter "shared_buffers": "all"; FATAL: configuration file "/pgdata/postgresql.conf" contains errors`, true},
		{"a csvlog record", `{"level":"info","logger":"postgres","msg":"record","record":{"error_severity":"FATAL",` +
			`"message":"could not access file \"pgaudit\": No such file or directory"}}`,
			`FATAL: could not access file "pgaudit": No such file or directory`, true},
		{"a raw line", "2026-11-27 10:00:01.123 UTC [1] PANIC:  could not locate a valid checkpoint record\n",
			"PANIC: could not locate a valid checkpoint record", true},
		{"the instance manager's error", `{"level":"info","msg":"Starting up instance"}` + "\n" +
			`{"level":"error","msg":"Error while bootstrapping data directory","error":"cannot create directory"}`,
			"Error while bootstrapping data directory: cannot create directory", false},
		{"nothing the server or the instance manager said", "one\ntwo\n\n", "", false},
		{"nothing", "", "", false},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			got, refused := Stopped(test.log)
			if got != test.want || refused != test.wantRefused {
				t.Errorf("Stopped = %q, %t; want %q, %t", got, refused, test.want, test.wantRefused)
			}
		})
	}
}

// FuzzStopped: whatever a container printed, Stopped returns; a refusal it reports
// quotes the server's FATAL or PANIC.
func FuzzStopped(f *testing.F) {
	f.Add(refusedLog)
	f.Add("2026-11-27 10:00:01.123 UTC [1] PANIC:  could not locate a valid checkpoint record\n")
	f.Add(`{"level":"error","msg":"x","error":"y"}`)
	f.Fuzz(func(t *testing.T, log string) {
		message, refused := Stopped(log)
		if refused && !strings.Contains(message, "FATAL:") && !strings.Contains(message, "PANIC:") {
			t.Errorf("Stopped(%q) = %q, refused, without the server's FATAL or PANIC", log, message)
		}
	})
}
