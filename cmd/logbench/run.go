package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/benchstatus"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localrun"
	"github.com/logbench/logbench/internal/manifest"
	"github.com/logbench/logbench/internal/report"
	"github.com/logbench/logbench/internal/results"
)

func init() {
	subcommands = append(subcommands, newRunCommand)
}

type runOptions struct {
	local    bool
	file     string
	output   string
	workDir  string
	savePath string
	pgBin    string
	tcp      bool
	// counterLibrary names the logbench_counter library; noCounter runs without one.
	counterLibrary string
	noCounter      bool
}

func newRunCommand() *cobra.Command {
	opts := runOptions{output: string(report.FormatTable)}
	cmd := &cobra.Command{
		Use:   "run --local -f BENCHMARK.yaml",
		Short: "Run a LoggingBenchmark against PostgreSQL servers started on this machine",
		Long: `Run reads the LoggingBenchmark YAML the operator takes, validates it exactly as the
API server would, and measures it locally: for each destination it starts its own
PostgreSQL server (initdb in a temporary directory, a free loopback port), initialises
pgbench once, runs every client count and repeat, counts the records delivered to the
destination and prints the results. Servers and temporary files are removed at the end,
also on Ctrl-C, and the runs measured so far are printed.

With the logbench_counter extension (--counter-library, or installed in the
PostgreSQL installation), every server counts the records it logs at the source: each
run's expected records are that count, and logging whose records no model predicts
(sampling, auto_explain, lock waits, temporary files) can be measured.

In a Kubernetes cluster, apply the same file with kubectl instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runLocal(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	flags := cmd.Flags()
	flags.BoolVar(&opts.local, "local", false, "run on this machine (required: in a cluster, use kubectl apply -f)")
	flags.StringVarP(&opts.file, "file", "f", "", "LoggingBenchmark YAML or JSON file")
	flags.StringVarP(&opts.output, "output", "o", opts.output, "results format: table, json, csv or markdown")
	// Empty is the system's temporary directory (os.MkdirTemp), left unnamed so that the
	// help, and the CLI reference made from it, say the same on every machine.
	flags.StringVar(&opts.workDir, "work-dir", "", "where the temporary servers live (default: $TMPDIR or /tmp)")
	flags.StringVar(&opts.savePath, "save", "", "also write the benchmark with its results in status to this YAML file")
	flags.StringVar(
		&opts.pgBin,
		"pg-bin",
		"",
		"PostgreSQL installation to run (its bin directory with initdb, postgres and pgbench, or the directory above it); "+
			"default: found through pg_config, PATH or /usr/lib/postgresql/*/bin",
	)
	flags.BoolVar(&opts.tcp, "tcp", false, "connect pgbench over TCP on the loopback, as a remote client would, "+
		"instead of the servers' Unix sockets, which cost it less")
	flags.StringVar(&opts.counterLibrary, "counter-library", "", "the logbench_counter library (logbench_counter.so, "+
		"built by make logbench-counter into bin/logbench_counter/pg<major>) every server preloads to count the "+
		"records it logs at the source; default: the installation's own, when installed in its library directory")
	flags.BoolVar(&opts.noCounter, "no-counter", false, "run without logbench_counter: the expected records are "+
		"predicted, and settings only a count at the source knows are refused")
	_ = cmd.MarkFlagRequired("file")
	return cmd
}

func runLocal(ctx context.Context, opts runOptions, stdout, stderr io.Writer) error {
	if !opts.local {
		return errors.New("logbench run measures on this machine and needs --local; " +
			"to run in Kubernetes, install the operator and kubectl apply -f " + opts.file)
	}
	format, err := report.ParseRowsFormat(opts.output)
	if err != nil {
		return err
	}
	documents, err := manifest.Read(opts.file)
	if err != nil {
		return err
	}
	benchmark := documents.Benchmark
	installation, err := findInstallation(opts.pgBin)
	if err != nil {
		return err
	}
	counterLibrary, err := findCounter(installation, opts)
	if err != nil {
		return err
	}
	if err := localrun.CheckCounter(&benchmark.Spec, counterLibrary); err != nil {
		return err
	}
	spec := &benchmark.Spec
	if ignored := localrun.IgnoredFields(spec); len(ignored) > 0 {
		fmt.Fprintf(stderr, "notice: ignored locally (they only apply in a cluster): %s\n", strings.Join(ignored, ", "))
	}

	// Locally nothing needs to plan the same order twice: a seed the spec leaves out is
	// drawn, and the status records it for a replay.
	seed := rand.Int64()
	if spec.Workload.Seed != nil {
		seed = *spec.Workload.Seed
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := newProgressReporter(stderr)
	defer progress.stop()
	started := metav1.Now()
	outcome, runErr := localrun.Execute(ctx, spec, localrun.Options{
		Installation:   installation,
		WorkDir:        opts.workDir,
		Progress:       progress,
		Seed:           seed,
		TCP:            opts.tcp,
		CounterLibrary: counterLibrary,
		ConfigMaps:     documents.ConfigMaps,
	})
	progress.stop()

	// The status the operator would write for these runs, conditions included.
	benchmark.Status.StartTime = &started
	benchstatus.Set(
		benchmark,
		benchstatus.Observation{Planned: outcome.PlannedRuns(spec, seed), Seed: seed, Finished: outcome.Runs, Done: true},
	)
	rows := benchmark.Status.Results
	if err := report.RenderRows(stdout, format, rows); err != nil {
		return err
	}
	for _, skipped := range outcome.Skipped {
		fmt.Fprintf(stderr, "skipped %s: %s\n", skipped.Destination, skipped.Reason)
	}
	if opts.savePath != "" {
		if err := save(opts.savePath, benchmark); err != nil {
			return err
		}
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return fmt.Errorf("interrupted after %d runs; the results above are those measured", len(outcome.Runs))
		}
		return runErr
	}
	if len(rows) == 0 {
		return localrun.ErrNothingToRun
	}
	if failed := len(results.Failures(rows)); failed > 0 {
		return fmt.Errorf("%d runs failed; their errors are in the footnotes above", failed)
	}
	return nil
}

// findInstallation returns the installation --pg-bin names, or the one found on this
// machine.
func findInstallation(pgBin string) (localpg.Installation, error) {
	if pgBin == "" {
		return localpg.FindInstallation()
	}
	installation, err := localpg.InstallationAt(pgBin)
	if err != nil {
		return localpg.Installation{}, fmt.Errorf("--pg-bin: %w", err)
	}
	return installation, nil
}

// findCounter returns the logbench_counter library the servers preload, "" for none.
func findCounter(installation localpg.Installation, opts runOptions) (string, error) {
	switch {
	case opts.noCounter && opts.counterLibrary != "":
		return "", errors.New("--no-counter and --counter-library contradict each other: give one")
	case opts.noCounter:
		return "", nil
	}
	library, err := localrun.FindCounter(installation, opts.counterLibrary)
	if err != nil {
		return "", fmt.Errorf("--counter-library: %w", err)
	}
	return library, nil
}

// save writes the benchmark as the operator would leave it, status included, so that
// a local run can be reported like a cluster one.
func save(path string, benchmark *v1alpha1.LoggingBenchmark) error {
	data, err := yaml.Marshal(benchmark)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// progressReporter shows the current run on stderr: a line that refreshes every second
// on a terminal, one line per run otherwise (CI logs).
type progressReporter struct {
	out         io.Writer
	interactive bool
	began       time.Time

	mu      sync.Mutex
	current string
	run     localrun.Run
	ticker  *time.Ticker
	done    chan struct{}
	stopped sync.Once
}

func newProgressReporter(out io.Writer) *progressReporter {
	file, isFile := out.(*os.File)
	p := &progressReporter{
		out:         out,
		interactive: isFile && term.IsTerminal(int(file.Fd())),
		began:       time.Now(),
		done:        make(chan struct{}),
	}
	if p.interactive {
		p.ticker = time.NewTicker(time.Second)
		go p.refresh()
	}
	return p
}

func (p *progressReporter) RunStarted(run localrun.Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.run = run
	p.current = fmt.Sprintf("[%d/%d] %s, %d clients, repeat %d",
		run.Index, run.Total, run.Key.Destination, run.Key.Clients, run.Key.Repeat)
	p.print()
}

func (p *progressReporter) RunFinished(run localrun.Run, result v1alpha1.RepeatResult) {
	if result.Error == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLine()
	fmt.Fprintf(p.out, "run %s/%d/%d failed: %s\n", run.Key.Destination, run.Key.Clients, run.Key.Repeat,
		strings.SplitN(result.Error, "\n", 2)[0])
}

func (p *progressReporter) refresh() {
	for {
		select {
		case <-p.done:
			return
		case <-p.ticker.C:
			p.mu.Lock()
			p.print()
			p.mu.Unlock()
		}
	}
}

// print writes the current run with the elapsed time and, from the runs done so far,
// an estimate of the time left.
func (p *progressReporter) print() {
	if p.current == "" {
		return
	}
	elapsed := time.Since(p.began).Round(time.Second)
	line := fmt.Sprintf("%s (elapsed %s", p.current, elapsed)
	if done := p.run.Index - 1; done > 0 {
		left := time.Duration(float64(elapsed) / float64(done) * float64(p.run.Total-done)).Round(time.Second)
		line += fmt.Sprintf(", about %s left", left)
	}
	line += ")"
	if p.interactive {
		p.clearLine()
		fmt.Fprint(p.out, line)
		return
	}
	// Without a terminal there is no ticker: this runs once per run.
	fmt.Fprintln(p.out, line)
}

func (p *progressReporter) clearLine() {
	if p.interactive {
		fmt.Fprint(p.out, "\r\033[K")
	}
}

func (p *progressReporter) stop() {
	p.stopped.Do(func() {
		close(p.done)
		if p.ticker != nil {
			p.ticker.Stop()
		}
		p.mu.Lock()
		p.clearLine()
		p.mu.Unlock()
	})
}
