package records

import (
	"bytes"
	"testing"
)

// BenchmarkCounter reports the throughput of each counter on real PostgreSQL 15
// records repeated to a few megabytes, written in the 1 MiB reads of the file
// destination.
func BenchmarkCounter(b *testing.B) {
	stderrLog := readTestdata(b, "pg15-stderr.log")
	csvLog := readTestdata(b, "pg15.csv")
	jsonLog := readTestdata(b, "pg15.json")
	for _, bench := range []struct {
		format Format
		log    []byte
	}{
		{FormatStderr, stderrLog},
		{FormatCSVLog, csvLog},
		{FormatJSONLog, jsonLog},
		{FormatContainerLog, containerLogFrom(b, stderrLog, csvLog, jsonLog)},
	} {
		input := bytes.Repeat(bench.log, 4<<20/len(bench.log)+1)
		b.Run(bench.format.String(), func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			b.ReportAllocs()
			for b.Loop() {
				c := NewCounter(bench.format, "lbtag-bench")
				for start := 0; start < len(input); start += 1 << 20 {
					_, _ = c.Write(input[start:min(start+1<<20, len(input))])
				}
			}
		})
	}
}
