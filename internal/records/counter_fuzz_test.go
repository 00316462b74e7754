package records

import (
	"bytes"
	"strings"
	"testing"
)

// fuzzCounter checks, for any input, that counting does not panic and that the count
// does not depend on how the input is cut into writes. It returns the count. Tags
// spanning lines are outside NewCounter's contract and skipped.
func fuzzCounter(t *testing.T, f Format, tag string, input []byte, chunk uint8) int64 {
	if strings.Contains(tag, "\n") {
		t.Skip("a tag is one line")
	}
	whole := countWhole(f, tag, input)
	size := int(chunk)%64 + 1
	if chunked := countInChunks(f, tag, input, size); chunked != whole {
		t.Fatalf("%v, tag %q: %d records in one write, %d in chunks of %d bytes", f, tag, whole, chunked, size)
	}
	return whole
}

// seedSize bounds the seeds taken from the test data: the fuzzer minimises every
// interesting input, which takes long on big ones.
const seedSize = 2048

// addSeeds gives a fuzz target the start of the test data of its format as a
// starting point.
func addSeeds(f *testing.F, seeds ...[]byte) {
	for _, seed := range seeds {
		f.Add(seed[:min(len(seed), seedSize)], "lbtag", uint8(3))
	}
}

func FuzzCounterStderr(f *testing.F) {
	addSeeds(f, readTestdata(f, "pg15-stderr.log"),
		[]byte(prefix+"lbtag ERROR:  boom\n"+prefix+"lbtag DETAIL:  d\n\tmore lbtag\n"+prefix+"x STATEMENT:  s"))
	f.Fuzz(func(t *testing.T, input []byte, tag string, chunk uint8) {
		fuzzCounter(t, FormatStderr, tag, input, chunk)
	})
}

func FuzzCounterJSONLog(f *testing.F) {
	addSeeds(f, readTestdata(f, "pg15.json"))
	f.Fuzz(func(t *testing.T, input []byte, tag string, chunk uint8) {
		got := fuzzCounter(t, FormatJSONLog, tag, input, chunk)
		if tag == "" || bytes.Contains([]byte(tag), []byte("\n")) {
			return
		}
		var want int64
		for line := range bytes.SplitSeq(input, []byte("\n")) {
			if bytes.Contains(line, []byte(tag)) {
				want++
			}
		}
		if got != want {
			t.Fatalf("tag %q: counted %d records, %d lines hold it", tag, got, want)
		}
	})
}

func FuzzCounterContainerLog(f *testing.F) {
	addSeeds(
		f,
		containerLogFrom(f, readTestdata(f, "pg15-stderr.log"), readTestdata(f, "pg15.csv"), readTestdata(f, "pg15.json")),
	)
	f.Fuzz(func(t *testing.T, input []byte, tag string, chunk uint8) {
		fuzzCounter(t, FormatContainerLog, tag, input, chunk)
	})
}

// FuzzCounterCSVLog also checks the count against encoding/csv whenever the input is
// valid CSV and the tag reads the same in a field and in the raw row.
func FuzzCounterCSVLog(f *testing.F) {
	addSeeds(f, readTestdata(f, "pg15.csv"), []byte("a,\"say \"\"hi\n\"\" lbtag\",x\nb,\"\"\"\",lbtag\n"))
	f.Fuzz(func(t *testing.T, input []byte, tag string, chunk uint8) {
		got := fuzzCounter(t, FormatCSVLog, tag, input, chunk)
		if tag == "" || bytes.ContainsAny([]byte(tag), "\"\n\r,") {
			return
		}
		want, err := csvOracle(input, tag)
		if err != nil {
			return
		}
		if got != want {
			t.Fatalf("tag %q: counted %d records, encoding/csv finds %d", tag, got, want)
		}
	})
}
