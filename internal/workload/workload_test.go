package workload

import (
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
)

// pgbench15Scripts is pgbench 15's --show-script output without its header line.
var pgbench15Scripts = map[v1alpha1.BuiltinWorkload]string{
	v1alpha1.WorkloadSelectOnly: `\set aid random(1, 100000 * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
`,
	v1alpha1.WorkloadTPCBLike: `\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
	v1alpha1.WorkloadSimpleUpdate: `\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
`,
}

func TestForBuiltin(t *testing.T) {
	const tag = "lb_csv_c4_r2_0a1b2c"
	tests := []struct {
		builtin v1alpha1.BuiltinWorkload
		classes []StatementClass
	}{
		{v1alpha1.WorkloadSelectOnly, []StatementClass{ClassRead}},
		{v1alpha1.WorkloadTPCBLike, []StatementClass{
			ClassUtility, ClassMod, ClassRead, ClassMod, ClassMod, ClassMod, ClassUtility,
		}},
		{v1alpha1.WorkloadSimpleUpdate, []StatementClass{ClassUtility, ClassMod, ClassRead, ClassMod, ClassUtility}},
	}
	for _, tt := range tests {
		t.Run(string(tt.builtin), func(t *testing.T) {
			script, err := ForBuiltin(tt.builtin, tag)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.ReplaceAll(script.Text, " /* "+tag+" */", ""); got != pgbench15Scripts[tt.builtin] {
				t.Errorf("script without its tag differs from pgbench 15's:\n%s\nwant:\n%s", got, pgbench15Scripts[tt.builtin])
			}
			if len(script.Statements) != len(tt.classes) {
				t.Fatalf("%d statements, want %d", len(script.Statements), len(tt.classes))
			}
			for i, s := range script.Statements {
				if s.Class != tt.classes[i] {
					t.Errorf("statement %d %q: class %s, want %s", i, s.SQL, s.Class, tt.classes[i])
				}
				if !strings.HasSuffix(s.SQL, " /* "+tag+" */;") {
					t.Errorf("statement %d %q does not end with the tag comment", i, s.SQL)
				}
				if !strings.Contains(script.Text, "\n"+s.SQL+"\n") {
					t.Errorf("statement %d %q is not a line of the script", i, s.SQL)
				}
			}
		})
	}
}

func TestForBuiltinRejects(t *testing.T) {
	tests := []struct {
		name    string
		builtin v1alpha1.BuiltinWorkload
		tag     string
	}{
		{"unknown builtin", "TPCC", "lb_a_c1_r1_000000"},
		{"empty tag", v1alpha1.WorkloadSelectOnly, ""},
		{"tag ending the comment", v1alpha1.WorkloadSelectOnly, "x*/ DROP TABLE t; /*"},
		{"tag with a pgbench variable", v1alpha1.WorkloadSelectOnly, "a:scale"},
		{"tag with a newline", v1alpha1.WorkloadSelectOnly, "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ForBuiltin(tt.builtin, tt.tag); err == nil {
				t.Errorf("ForBuiltin(%q, %q) succeeded", tt.builtin, tt.tag)
			}
		})
	}
}
