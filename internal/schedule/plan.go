// Package schedule decides which runs of a benchmark execute and in what order: the
// plan in rounds, interleaved and shuffled from a seed, and the ramp that grows the
// client counts round by round until a stop condition finds each destination's knee.
// It is pure, as internal/results whose rows the ramp reads, so that the operator and
// local mode plan the same runs from the same finished ones.
package schedule

import (
	"math/rand/v2"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/results"
)

// Plan lists the runs of a benchmark in the order they execute: in rounds, one per
// client count (in the spec's order) and repeat, each running every destination once in
// an order shuffled from seed. Interleaved so, a drift during the benchmark (a
// neighbour's load, caches filling) spreads over every destination instead of landing
// on the one that runs while it lasts, and a repeat's runs share their moment with the
// baseline's run they are paired with. The same seed gives the same order.
//
// With a ramp, the plan grows with the finished runs: the rounds of a client count are
// planned once every run of the count before it finished, without the destinations whose
// ramp that count stopped (Knees), and the baseline runs as long as another destination
// does. Computed from the finished runs alone, it is the same after a restart.
func Plan(
	spec *v1alpha1.LoggingBenchmarkSpec, seed int64, finished map[results.RunKey]v1alpha1.RepeatResult,
) []results.RunKey {
	destinations := spec.EffectiveDestinations()
	counts := spec.Workload.ClientCounts()
	runs := make([]results.RunKey, 0, len(destinations)*len(counts)*int(spec.Workload.Repeats))
	stopped := map[string]bool{}
	var knees []v1alpha1.Knee
	if spec.Workload.Ramp != nil {
		knees = Knees(spec, results.Aggregate(spec, finished))
	}
	round := uint64(0)
	for _, clients := range counts {
		roundStart := len(runs)
		for repeat := int32(1); repeat <= spec.Workload.Repeats; repeat++ {
			for _, i := range shuffled(len(destinations), uint64(seed), round) {
				if !stopped[destinations[i].Name] {
					runs = append(runs, results.RunKey{Destination: destinations[i].Name, Clients: clients, Repeat: repeat})
				}
			}
			round++
		}
		if spec.Workload.Ramp == nil {
			continue
		}
		for _, run := range runs[roundStart:] {
			if _, done := finished[run]; !done {
				return runs
			}
		}
		for _, knee := range knees {
			// The knees come from every finished run, those of later counts too: only a
			// knee at this count or before stops the destination's next rounds.
			if knee.StoppedAt != 0 && knee.StoppedAt <= clients {
				stopped[knee.Destination] = true
			}
		}
		if baseline := results.BaselineName(spec); baseline != "" && len(stopped) == len(destinations)-1 {
			stopped[baseline] = true
		}
		if len(stopped) == len(destinations) {
			return runs
		}
	}
	return runs
}

// shuffled is a permutation of 0..n-1 for one round: a Fisher-Yates shuffle driven by
// PCG, whose output its specification fixes, so that a seed replays the same order with
// any build of logbench.
func shuffled(n int, seed, round uint64) []int {
	source := rand.NewPCG(seed, round)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for i := n - 1; i > 0; i-- {
		j := int(source.Uint64() % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// Of records the order of the planned runs and the seed that shuffled them.
func Of(planned []results.RunKey, seed int64) *v1alpha1.Schedule {
	schedule := &v1alpha1.Schedule{Seed: seed, Runs: make([]string, len(planned))}
	for i, run := range planned {
		schedule.Runs[i] = run.String()
	}
	return schedule
}
