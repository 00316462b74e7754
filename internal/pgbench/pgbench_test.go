package pgbench

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
)

func TestRunArgs(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{
			name: "duration",
			opts: Options{
				Scripts:   []Script{{File: "/s/t.pgbench", Weight: 1}},
				Clients:   4,
				Threads:   2,
				Duration:  30 * time.Second,
				QueryMode: v1alpha1.QueryPrepared,
				Scale:     10,
			},
			want: "-n -f /s/t.pgbench@1 -D scale=10 -M prepared -c 4 -j 2 -r -T 30 -P 3630",
		},
		{
			name: "fractional duration rounds up",
			opts: Options{
				Scripts:   []Script{{File: "t", Weight: 1}},
				Clients:   1,
				Threads:   1,
				Duration:  1500 * time.Millisecond,
				QueryMode: v1alpha1.QuerySimple,
				Scale:     1,
			},
			want: "-n -f t@1 -D scale=1 -M simple -c 1 -j 1 -r -T 2 -P 3602",
		},
		{
			name: "transactions win over duration",
			opts: Options{
				Scripts:      []Script{{File: "t", Weight: 1}},
				Clients:      2,
				Threads:      1,
				Duration:     time.Minute,
				Transactions: 500,
				QueryMode:    v1alpha1.QueryExtended,
				Scale:        3,
			},
			want: "-n -f t@1 -D scale=3 -M extended -c 2 -j 1 -r -t 500 -P 86400",
		},
		{
			name: "weighted scripts, a name holding @",
			opts: Options{
				Scripts:   []Script{{File: "/s/read.sql", Weight: 10}, {File: "/s/a@b.sql", Weight: 1}},
				Clients:   2,
				Threads:   2,
				Duration:  5 * time.Second,
				QueryMode: v1alpha1.QueryPrepared,
				Scale:     1,
			},
			want: "-n -f /s/read.sql@10 -f /s/a@b.sql@1 -D scale=1 -M prepared -c 2 -j 2 -r -T 5 -P 3605",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(RunArgs(tt.opts), " "); got != tt.want {
				t.Errorf("RunArgs = %s\nwant       %s", got, tt.want)
			}
		})
	}
}

func TestInitArgs(t *testing.T) {
	tests := []struct {
		scale    int
		unlogged bool
		want     string
	}{
		{10, false, "-i -s 10 -q"},
		{1, true, "-i -s 1 -q --unlogged-tables"},
	}
	for _, tt := range tests {
		if got := strings.Join(InitArgs(tt.scale, tt.unlogged), " "); got != tt.want {
			t.Errorf("InitArgs(%d, %t) = %s, want %s", tt.scale, tt.unlogged, got, tt.want)
		}
	}
}

// Samples named pg15-* are real output of pgbench 15.18 on this project's machines;
// *-from-source samples follow printResults of that version's pgbench.c.
func TestParse(t *testing.T) {
	tests := []struct {
		file string
		want Result
		// statements: count, then the one checked in detail
		statements int
		statement  int
		wantStat   StatementStat
	}{
		{
			file:       "pg13-from-source.out",
			want:       Result{Transactions: 21963, TPS: 2196.637012, LatencyAvgMs: 0.910, LatencyStdDevMs: 0.412},
			statements: 11, statement: 4,
			wantStat: StatementStat{LatencyMs: 0.044, SQL: "BEGIN /* lb_pg13_c2_r1_abcdef */;"},
		},
		{
			file:       "pg14-from-source.out",
			want:       Result{Transactions: 4000, TPS: 12461.012345, LatencyAvgMs: 0.321, LatencyStdDevMs: 0.058},
			statements: 2, statement: 1,
			wantStat: StatementStat{
				LatencyMs: 0.301,
				SQL:       "SELECT abalance FROM pgbench_accounts WHERE aid = :aid /* lb_pg14_c4_r2_abcdef */;",
			},
		},
		{
			file:       "pg15-tpcb-prepared-duration.out",
			want:       Result{Transactions: 3915, TPS: 1958.058047, LatencyAvgMs: 1.019, LatencyStdDevMs: 2.030},
			statements: 11, statement: 10,
			wantStat: StatementStat{LatencyMs: 0.345, SQL: "END /* lb_x_c2_r1_abcdef */;"},
		},
		{
			file:       "pg15-tpcb-simple-transactions.out",
			want:       Result{Transactions: 100, TPS: 1108.549131, LatencyAvgMs: 0.901, LatencyStdDevMs: 0.418},
			statements: 11, statement: 0,
			wantStat: StatementStat{LatencyMs: 0.001, SQL: `\set aid random(1, 100000 * :scale)`},
		},
		{
			file:       "pg15-conflicts-failures.out",
			want:       Result{Transactions: 61, Failed: 139, TPS: 1277.620693, LatencyAvgMs: 0.766, LatencyStdDevMs: 0.536},
			statements: 3, statement: 1,
			wantStat: StatementStat{
				LatencyMs: 0.142,
				Failures:  139,
				SQL:       "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;",
			},
		},
		{
			file: "pg15-conflicts-retries-progress.out",
			want: Result{
				Transactions:    2496,
				Failed:          1973,
				Retried:         2469,
				TPS:             1252.635377,
				LatencyAvgMs:    1.087,
				LatencyStdDevMs: 1.312,
			},
			statements: 3, statement: 1,
			wantStat: StatementStat{
				LatencyMs: 0.160,
				Failures:  1973,
				Retries:   4673,
				SQL:       "UPDATE pgbench_branches SET bbalance = bbalance + 1 WHERE bid = 1;",
			},
		},
		{
			file:       "pg16-from-source.out",
			want:       Result{Transactions: 301122, TPS: 10037.412, LatencyAvgMs: 0.100, LatencyStdDevMs: 0.021},
			statements: 2, statement: 1,
			wantStat: StatementStat{
				LatencyMs: 0.097,
				SQL:       "SELECT abalance FROM pgbench_accounts WHERE aid = :aid /* lb_pg16_c1_r1_abcdef */;",
			},
		},
		{
			file: "pg17-from-source.out",
			want: Result{
				Transactions:    120480,
				Failed:          12,
				Retried:         431,
				TPS:             2007.99812,
				LatencyAvgMs:    3.982,
				LatencyStdDevMs: 2.107,
			},
			statements: 9, statement: 5,
			wantStat: StatementStat{
				LatencyMs: 0.412,
				Failures:  12,
				Retries:   467,
				SQL:       "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid /* lb_pg17_c8_r3_abcdef */;",
			},
		},
		{
			file:       "pg18-from-source.out",
			want:       Result{Transactions: 998, Failed: 2, TPS: 24390.243902, LatencyAvgMs: 0.081, LatencyStdDevMs: 0.019},
			statements: 2, statement: 1,
			wantStat: StatementStat{
				LatencyMs: 0.078,
				Failures:  2,
				SQL:       "SELECT abalance FROM pgbench_accounts WHERE aid = :aid /* lb_pg18_c2_r1_abcdef */;",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			output, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(output)
			if err != nil {
				t.Fatal(err)
			}
			if got.Scripts != nil {
				t.Errorf("a run of one script reports scripts %+v", got.Scripts)
			}
			if len(got.Statements) != tt.statements {
				t.Fatalf("%d statements, want %d: %+v", len(got.Statements), tt.statements, got.Statements)
			}
			if got.Statements[tt.statement] != tt.wantStat {
				t.Errorf("statement %d = %+v, want %+v", tt.statement, got.Statements[tt.statement], tt.wantStat)
			}
			got.Statements = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse = %+v\nwant    %+v", got, tt.want)
			}
		})
	}
}

// TestParseScripts reads each script's report of a run of two, in the formats of
// pgbench 15 and 18 (real runs on the project's machine, -T 1, weights 3 and 1, the second
// script's statements sleeping 1 ms).
func TestParseScripts(t *testing.T) {
	for file, want := range map[string]Result{
		"pg15-two-scripts.out": {Transactions: 3321, TPS: 3378.622405, LatencyAvgMs: 0.592, Scripts: []ScriptStat{
			{Transactions: 2453, TPS: 2495.561807, LatencyAvgMs: 0.041, LatencyStdDevMs: new(0.092)},
			{Transactions: 868, TPS: 883.060599, LatencyAvgMs: 2.144, LatencyStdDevMs: new(0.44)},
		}},
		"pg18-two-scripts.out": {Transactions: 3422, TPS: 3440.582587, LatencyAvgMs: 0.581, Scripts: []ScriptStat{
			{Transactions: 2542, TPS: 2555.803897, LatencyAvgMs: 0.042, LatencyStdDevMs: new(0.043)},
			{Transactions: 880, TPS: 884.778690, LatencyAvgMs: 2.131, LatencyStdDevMs: new(0.336)},
		}},
	} {
		t.Run(file, func(t *testing.T) {
			output, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(output)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse = %+v\nwant    %+v", got, want)
			}
		})
	}
	// A script's report that does not read leaves the scripts out, not the run; pgbench's
	// NaN for a variance its unlocked sums left below zero leaves the stddev out.
	report := "number of transactions actually processed: 2\ntps = 2.0 (without initial connection time)\n" +
		"SQL script 1: a.sql\n - 1 transactions (50.0% of total, tps = TPS)\n - latency stddev = NaN ms\n"
	got, err := Parse([]byte(strings.Replace(report, "TPS", "1.0", 1)))
	if err != nil || len(got.Scripts) != 1 || got.Scripts[0].TPS != 1 || got.Scripts[0].LatencyStdDevMs != nil {
		t.Errorf("a script's NaN stddev: %+v, %v; want the script without a stddev", got, err)
	}
	got, err = Parse([]byte(strings.Replace(report, "TPS", "fast", 1)))
	if err != nil || got.Transactions != 2 || got.Scripts != nil {
		t.Errorf("a script's garbled tps: %+v, %v; want the run without scripts", got, err)
	}
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name   string
		output string
	}{
		{"empty", ""},
		{"connection failure", "pgbench: error: connection to server on socket \"/tmp/.s.PGSQL.5432\" failed: " +
			"No such file or directory\n"},
		{"no tps line", "number of transactions actually processed: 10\nlatency average = 1.000 ms\n"},
		{"only the tps with connections", "number of transactions actually processed: 10\n" +
			"tps = 5.0 (including connections establishing)\n"},
		{"negative count", "number of transactions actually processed: -1\n" +
			"tps = 5.0 (without initial connection time)\n"},
		{"garbled latency", "number of transactions actually processed: 1\nlatency average = fast\n" +
			"tps = 5.0 (without initial connection time)\n"},
		{"infinite tps", "number of transactions actually processed: 1\n" +
			"tps = +Inf (without initial connection time)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Parse([]byte(tt.output)); err == nil {
				t.Errorf("Parse succeeded: %+v", got)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	samples, err := filepath.Glob(filepath.Join("testdata", "*.out"))
	if err != nil {
		f.Fatal(err)
	}
	for _, sample := range samples {
		output, err := os.ReadFile(sample)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(output)
	}
	f.Fuzz(func(t *testing.T, output []byte) {
		result, err := Parse(output)
		if err != nil {
			return
		}
		if result.Transactions < 0 || result.Failed < 0 || result.Retried < 0 ||
			result.TPS < 0 || result.LatencyAvgMs < 0 || result.LatencyStdDevMs < 0 {
			t.Fatalf("negative figure in %+v", result)
		}
		for _, s := range result.Statements {
			if s.LatencyMs < 0 || s.Failures < 0 || s.Retries < 0 {
				t.Fatalf("negative figure in statement %+v", s)
			}
		}
		for _, s := range result.Scripts {
			if s.Transactions < 0 || s.Failed < 0 || s.TPS < 0 || s.LatencyAvgMs < 0 ||
				(s.LatencyStdDevMs != nil && *s.LatencyStdDevMs < 0) {
				t.Fatalf("negative figure in script %+v", s)
			}
		}
	})
}
