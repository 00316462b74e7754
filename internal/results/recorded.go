package results

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Recorded is the run a LoggingBenchmarkRun records and its result.
func Recorded(record *v1alpha1.LoggingBenchmarkRun) (RunKey, v1alpha1.RepeatResult) {
	result := record.Status
	result.Repeat = record.Spec.Repeat
	return RunKey{Destination: record.Spec.Destination, Clients: record.Spec.Clients, Repeat: record.Spec.Repeat}, result
}

// WithRepeats fills the repeats of the rows of benchmark's status that leave them out,
// as a status in a cluster does, from the records of its runs among records, in the
// order of their repeat: the rows as local mode writes them, for a report. Rows that hold
// their repeats (a status written before runs had records, or by local mode) keep them;
// records of other benchmarks (another name, namespace or, when both say, UID) are
// ignored.
func WithRepeats(benchmark *v1alpha1.LoggingBenchmark, records []v1alpha1.LoggingBenchmarkRun) []v1alpha1.Result {
	type row struct {
		destination string
		clients     int32
	}
	repeats := map[row][]v1alpha1.RepeatResult{}
	for i := range records {
		record := &records[i]
		if !recordOf(record, benchmark) {
			continue
		}
		run, result := Recorded(record)
		key := row{run.Destination, run.Clients}
		repeats[key] = append(repeats[key], result)
	}
	rows := slices.Clone(benchmark.Status.Results)
	for i := range rows {
		if len(rows[i].Repeats) > 0 {
			continue
		}
		recorded := repeats[row{rows[i].Destination, rows[i].Clients}]
		slices.SortFunc(recorded, func(a, b v1alpha1.RepeatResult) int { return cmp.Compare(a.Repeat, b.Repeat) })
		rows[i].Repeats = recorded
	}
	return rows
}

// recordOf tells whether record is of benchmark's runs.
func recordOf(record *v1alpha1.LoggingBenchmarkRun, benchmark *v1alpha1.LoggingBenchmark) bool {
	if record.Namespace != benchmark.Namespace || record.Spec.Benchmark != benchmark.Name {
		return false
	}
	owner := metav1.GetControllerOf(record)
	return owner == nil || benchmark.UID == "" || owner.UID == benchmark.UID
}
