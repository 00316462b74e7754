// Package workload builds the pgbench scripts logbench runs: copies of pgbench's builtin
// scripts whose every statement carries the run's tag, so that the run's log records are
// recognisable by their text as well as by their application_name.
package workload

import (
	"fmt"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
)

// StatementClass is how PostgreSQL's log_statement classifies a statement.
type StatementClass string

const (
	// ClassRead is a SELECT: logged only with log_statement=all.
	ClassRead StatementClass = "Read"
	// ClassMod is a data-modifying statement (INSERT, UPDATE, DELETE, ...): logged with
	// log_statement=mod or all.
	ClassMod StatementClass = "Mod"
	// ClassDDL is a data definition statement: logged with log_statement=ddl, mod or all.
	ClassDDL StatementClass = "DDL"
	// ClassUtility is a transaction control statement (BEGIN, END): logged only with
	// log_statement=all.
	ClassUtility StatementClass = "Utility"
)

// Statement is one SQL command of a script.
type Statement struct {
	// SQL is the command's line in the script; pgbench -r prints its first 127 bytes.
	SQL   string
	Class StatementClass
}

// Script is a pgbench script and the SQL statements one transaction of it executes.
type Script struct {
	Name string
	// Text is the script file's content.
	Text string
	// Statements are the SQL commands of one transaction, in order; meta-commands
	// (\set) send nothing to the server and are not listed.
	Statements []Statement
}

// builtin is a pgbench builtin script: its meta-commands and its SQL commands, each
// without the terminating semicolon so that the tag can be placed before it.
type builtin struct {
	name       string
	meta       []string
	statements []Statement
}

// The builtins below are pgbench 15's (pgbench --show-script=NAME).
var (
	setAid         = `\set aid random(1, 100000 * :scale)`
	setBidTidDelta = []string{
		`\set bid random(1, 1 * :scale)`,
		`\set tid random(1, 10 * :scale)`,
		`\set delta random(-5000, 5000)`,
	}
	begin         = Statement{SQL: "BEGIN", Class: ClassUtility}
	end           = Statement{SQL: "END", Class: ClassUtility}
	selectBalance = Statement{SQL: "SELECT abalance FROM pgbench_accounts WHERE aid = :aid", Class: ClassRead}
	updateAccount = Statement{
		SQL:   "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid",
		Class: ClassMod,
	}
	updateTeller = Statement{
		SQL:   "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid",
		Class: ClassMod,
	}
	updateBranch = Statement{
		SQL:   "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid",
		Class: ClassMod,
	}
	insertHistory = Statement{
		SQL: "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) " +
			"VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP)",
		Class: ClassMod,
	}
)

var builtins = map[v1alpha1.BuiltinWorkload]builtin{
	v1alpha1.WorkloadSelectOnly: {
		name:       "select-only",
		meta:       []string{setAid},
		statements: []Statement{selectBalance},
	},
	v1alpha1.WorkloadTPCBLike: {
		name:       "tpcb-like",
		meta:       append([]string{setAid}, setBidTidDelta...),
		statements: []Statement{begin, updateAccount, selectBalance, updateTeller, updateBranch, insertHistory, end},
	},
	v1alpha1.WorkloadSimpleUpdate: {
		name:       "simple-update",
		meta:       append([]string{setAid}, setBidTidDelta...),
		statements: []Statement{begin, updateAccount, selectBalance, insertHistory, end},
	},
}

// ForBuiltin returns the builtin script with tag embedded in every statement as a
// trailing comment.
func ForBuiltin(b v1alpha1.BuiltinWorkload, tag string) (Script, error) {
	source, ok := builtins[b]
	if !ok {
		return Script{}, fmt.Errorf("unknown builtin workload %q: use SelectOnly, TPCBLike or SimpleUpdate", b)
	}
	if err := validTag(tag); err != nil {
		return Script{}, err
	}
	script := Script{Name: source.name, Statements: make([]Statement, 0, len(source.statements))}
	var text strings.Builder
	for _, line := range source.meta {
		text.WriteString(line + "\n")
	}
	for _, s := range source.statements {
		tagged := Statement{SQL: s.SQL + " /* " + tag + " */;", Class: s.Class}
		script.Statements = append(script.Statements, tagged)
		text.WriteString(tagged.SQL + "\n")
	}
	script.Text = text.String()
	return script, nil
}

// validTag rejects tags that could end the comment, be read by pgbench as a variable
// (":name") or break the script's lines.
func validTag(tag string) error {
	if tag == "" {
		return fmt.Errorf("the workload tag is empty: create it with NewTag")
	}
	for i := 0; i < len(tag); i++ {
		if !isTagByte(tag[i]) {
			return fmt.Errorf("workload tag %q holds %q: only ASCII letters, digits, '_' and '-' are allowed", tag, tag[i])
		}
	}
	return nil
}

func isTagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}
