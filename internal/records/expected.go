package records

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/pgbench"
	"github.com/logbench/logbench/internal/workload"
)

// Execution is what one pgbench run executed, from its script and pgbench's report.
type Execution struct {
	Script    workload.Script
	QueryMode v1alpha1.QueryMode
	Clients   int
	// Transactions processed successfully, as pgbench reports them.
	Transactions int64
	// Failed transactions, as pgbench reports them.
	Failed int64
	// Statements is pgbench's per-command report; its retries count failed tries.
	Statements []pgbench.StatementStat
}

// Expectation is how many records of a run the server had to emit.
type Expectation struct {
	// Records is the exact count, or the least the server can have emitted when Estimate.
	Records int64
	// Max is the most the server can have emitted; zero means Records.
	Max int64
	// Estimate is true when the settings or the run make an exact count impossible.
	Estimate bool
	// Reason says why the count is an estimate.
	Reason string
	// Unpredictable is true when the settings log records no model predicts: Records is
	// then the least the server can have emitted and nothing bounds it above.
	Unpredictable bool
	// Counted is true when Records is the server's own count of the run's records, at
	// the source, rather than a prediction (Counted).
	Counted bool
	// Disagreement says how the prediction of a counted run differs from the count: an
	// accounting error.
	Disagreement string
}

// Exact is the expected count when it is exact, nil for an estimate.
func (e Expectation) Exact() *int64 {
	if e.Estimate {
		return nil
	}
	return &e.Records
}

// Upper is the most records the expectation allows.
func (e Expectation) Upper() int64 {
	return max(e.Records, e.Max)
}

// Expected returns the records PostgreSQL must emit for the run's statements and
// sessions. The rules below were measured against PostgreSQL 15 and 18 with their own
// pgbench (see groundtruth_test.go, which checks each of them against a real server's
// csvlog).
func Expected(exec Execution, s Settings) Expectation {
	statements := int64(len(exec.Script.Statements))
	messages := protocolMessages(exec.QueryMode)

	// log_statement: one record per executed statement of a logged class ("statement:"
	// in simple mode, "execute <name>:" in extended and prepared mode, both at Execute).
	// pgaudit adds an "AUDIT: SESSION" record of its own per executed statement of an
	// audited class, in every query mode (per relation with log_relation, and each
	// builtin statement touches one).
	logged := statementsWhere(exec.Script, func(c workload.StatementClass) bool { return logs(s.Statement, c) })
	audited := statementsWhere(exec.Script, func(c workload.StatementClass) bool { return audits(s.Pgaudit, c) })
	statementRecords := exec.Transactions * int64(logged+audited)
	// log_duration and log_min_duration_statement: one "duration:" record per protocol
	// message (Query; or Parse, Bind, Execute), never two for one message, whatever
	// log_statement already logged.
	durationRecords := exec.Transactions*statements*messages.perExecution +
		int64(exec.Clients)*statements*messages.perSession

	e := Expectation{Records: statementRecords + sessionRecords(exec.Clients, s)}
	var reasons []string
	allDurations := s.Duration || s.MinDurationStatementMs == 0
	switch {
	case allDurations:
		// log_duration=on logs every message's duration (the statement text is added when
		// log_min_duration_statement is also exceeded); log_min_duration_statement=0 does
		// the same with the text.
		e.Records += durationRecords
		e.Max = e.Records
	case s.MinDurationStatementMs > 0:
		// Only messages slower than the threshold are logged: anywhere from none to all.
		e.Max = e.Records + durationRecords
		reasons = append(
			reasons,
			fmt.Sprintf("log_min_duration_statement=%d ms logs only statements slower than that", s.MinDurationStatementMs),
		)
	default:
		e.Max = e.Records
	}
	if allDurations && messages.perSession > 0 && exec.Transactions < int64(exec.Clients) {
		// A session that ran no transaction may not have prepared the statements.
		e.Records -= int64(exec.Clients) * statements * messages.perSession
		reasons = append(
			reasons,
			fmt.Sprintf(
				"fewer transactions (%d) than clients (%d): some sessions may not have prepared their statements",
				exec.Transactions,
				exec.Clients,
			),
		)
	}
	if failedTries := exec.Failed + retries(exec.Statements); failedTries > 0 {
		// A failed try logs its statements up to the failure, an ERROR record and
		// pgbench's ROLLBACK; the successful transactions are counted above.
		perStatement := 1 + messages.perExecution
		e.Max += failedTries * ((statements+1)*perStatement + 1)
		reasons = append(
			reasons,
			fmt.Sprintf(
				"pgbench reported %d failed transactions and %d retries, whose records depend on where each try failed",
				exec.Failed,
				failedTries-exec.Failed,
			),
		)
	}
	if len(s.Unpredicted) > 0 {
		// Each adds records to what the settings above log, and removes none.
		reasons = append(reasons, fmt.Sprintf("%s log records no model predicts", strings.Join(s.Unpredicted, ", ")))
		e.Unpredictable, e.Max = true, math.MaxInt64
	}
	if len(reasons) > 0 {
		e.Estimate = true
		bounds := fmt.Sprintf("between %d and %d records", e.Records, e.Max)
		if e.Unpredictable {
			bounds = fmt.Sprintf("at least %d records", e.Records)
		}
		e.Reason = strings.Join(reasons, "; ") + ": " + bounds
	}
	return e
}

// Counted is the expectation of a run whose records the server counted itself, at the
// source: exactly counted. The model's prediction of the same run must agree with it:
// be equal when exact, hold it within its bounds when an estimate. A difference is an
// accounting error, never a drop: the count at the source is what the server did, and
// the model or the count is wrong.
func Counted(counted int64, predicted Expectation) Expectation {
	e := Expectation{Records: counted, Counted: true}
	switch {
	case !predicted.Estimate && counted != predicted.Records:
		e.Disagreement = fmt.Sprintf("the server counted %d records of the run at the source and the model "+
			"predicts %d: the model misses a kind of record, or the count one", counted, predicted.Records)
	case predicted.Estimate && (counted < predicted.Records || counted > predicted.Upper()):
		e.Disagreement = fmt.Sprintf("the server counted %d records of the run at the source, outside the "+
			"model's bounds (%s)", counted, predicted.Reason)
	}
	return e
}

// Source says where the expectation comes from, as results report it.
func (e Expectation) Source() v1alpha1.ExpectedSource {
	if e.Counted {
		return v1alpha1.ExpectedCounted
	}
	return v1alpha1.ExpectedPredicted
}

// sessionRecords counts the records of the run's sessions themselves. pgbench (without
// -C) opens one session per client plus one before them to check the server, all under
// the run's application_name. log_connections logs "connection authorized: ...
// application_name=<tag>" for each (the record's application_name field is still empty
// then, its message names the tag); "connection received" comes before the name is
// known and carries no tag. log_disconnections logs one "disconnection" record each.
func sessionRecords(clients int, s Settings) int64 {
	sessions := int64(clients) + 1
	var n int64
	if s.Connections {
		n += sessions
	}
	if s.Disconnections {
		n += sessions
	}
	return n
}

// messageCounts are the protocol messages that each get a duration record.
type messageCounts struct {
	// perExecution: messages each time a statement runs.
	perExecution int64
	// perSession: messages once per session and statement.
	perSession int64
}

func protocolMessages(mode v1alpha1.QueryMode) messageCounts {
	switch mode {
	case v1alpha1.QueryExtended:
		// Parse, Bind and Execute of an unnamed statement every time.
		return messageCounts{perExecution: 3}
	case v1alpha1.QueryPrepared:
		// Bind and Execute every time; Parse of the named statement once per session.
		return messageCounts{perExecution: 2, perSession: 1}
	}
	// One Query message.
	return messageCounts{perExecution: 1}
}

// statementsWhere counts the statements of one transaction whose class passes counted.
func statementsWhere(script workload.Script, counted func(workload.StatementClass) bool) int {
	n := 0
	for _, s := range script.Statements {
		if counted(s.Class) {
			n++
		}
	}
	return n
}

// pgauditClassOf is the pgaudit class of a statement of each log_statement class:
// SELECT is read, INSERT, UPDATE and DELETE write, BEGIN and END misc.
var pgauditClassOf = map[workload.StatementClass]v1alpha1.PgauditClass{
	workload.ClassRead:    v1alpha1.PgauditRead,
	workload.ClassMod:     v1alpha1.PgauditWrite,
	workload.ClassDDL:     v1alpha1.PgauditDDL,
	workload.ClassUtility: v1alpha1.PgauditMisc,
}

func audits(classes []v1alpha1.PgauditClass, class workload.StatementClass) bool {
	for _, audited := range classes {
		if audited == v1alpha1.PgauditAll || audited == pgauditClassOf[class] {
			return true
		}
	}
	return false
}

// logs reports whether log_statement=level logs a statement of the class: ddl logs
// DDL, mod adds data-modifying statements, all logs everything.
func logs(level v1alpha1.StatementLogging, class workload.StatementClass) bool {
	switch level {
	case v1alpha1.StatementAll:
		return true
	case v1alpha1.StatementMod:
		return class == workload.ClassMod || class == workload.ClassDDL
	case v1alpha1.StatementDDL:
		return class == workload.ClassDDL
	}
	return false
}

func retries(stats []pgbench.StatementStat) int64 {
	var n int64
	for _, s := range stats {
		n += s.Retries
	}
	return n
}

// Count is what logbench counted of a run's records at its destination.
type Count struct {
	// Delivered records counted by the end of the drain, and Late after it.
	Delivered, Late int64
	// Duplicates among them: copies beyond the first of a record, at least this many, or
	// exactly when DuplicatesExact (counted by the records' identity).
	Duplicates      int64
	DuplicatesExact bool
	// Unverified records logbench could not see, which the destination may hold, and
	// why.
	Unverified       int64
	UnverifiedReason string
}

// Reconcile compares the records of a run counted at a destination with the
// expectation: expected = delivered + late - duplicates + unverified + dropped. Dropped
// is what the pipeline is shown to have lost, reported only for exact expectations and
// as it is: a negative value is never clamped, and more records, each counted once,
// than the server can have emitted is an accounting error. Duplicates never offset a
// drop: unless counted exactly, they are a lower bound, so with any of them the drop is
// "at least"; so is a shortfall below an estimate's lower bound. Unverified records are never dropped.
func Reconcile(e Expectation, c Count) v1alpha1.Records {
	r := v1alpha1.Records{
		Expected: e.Records, Delivered: c.Delivered, ArrivedLate: c.Late, ExpectedIsEstimate: e.Estimate,
		ExpectedSource: e.Source(), Duplicates: c.Duplicates, Unverified: c.Unverified,
	}
	if c.Unverified > 0 {
		r.UnverifiedReason = c.UnverifiedReason
	}
	once := c.Delivered + c.Late - c.Duplicates
	switch shortfall := e.Records - once - c.Unverified; {
	case !e.Estimate && (c.Duplicates == 0 || c.DuplicatesExact):
		r.Dropped = &shortfall
	case !e.Estimate:
		atLeast := max(shortfall, 0)
		r.DroppedAtLeast = &atLeast
	case shortfall > 0:
		r.DroppedAtLeast = &shortfall
	}
	var accountingErrors []string
	if e.Disagreement != "" {
		accountingErrors = append(accountingErrors, e.Disagreement)
	}
	if once > e.Upper() {
		accountingErrors = append(accountingErrors, fmt.Sprintf("%d records arrived, %d of them duplicates, but the "+
			"server can have emitted at most %d for this run: the destination counted records that are not the run's, "+
			"or the expectation misses a kind of record", c.Delivered+c.Late, c.Duplicates, e.Upper()))
	}
	r.AccountingError = strings.Join(accountingErrors, "; ")
	return r
}

// Duplicates is the least number of copies a destination holds beyond one of each
// record: what it stored beyond the fewest records any earlier stage held, each of which
// holds a record once (the records written to the file, read by the shipper, or that
// the server can have emitted). Only a pipeline that retried a push can store a record
// twice; without a retry, an excess is an accounting error, not duplicates.
func Duplicates(stored int64, retried bool, earlier ...int64) int64 {
	if !retried || len(earlier) == 0 {
		return 0
	}
	return max(0, stored-slices.Min(earlier))
}

// Recount adds what a final count of the destination found after the drain ended to
// records reconciled at its end: those records arrived late, not never, and are no
// longer unverified. A recount below the drain's count adds nothing. The stages stay as
// counted when the drain ended, but for two things: duplicates counted by identity then
// are no longer exact, since the recount is a count and the late records may repeat
// others; and once nothing is missing, no stage lost records and no drop needs a reason.
func Recount(r v1alpha1.Records, e Expectation, recounted int64) v1alpha1.Records {
	late := recounted - r.Delivered
	if late <= 0 {
		return r
	}
	missing := e.Records - (recounted - r.Duplicates)
	reconciled := Reconcile(e, Count{
		Delivered: r.Delivered, Late: late, Duplicates: r.Duplicates,
		Unverified: min(r.Unverified, max(missing, 0)), UnverifiedReason: r.UnverifiedReason,
	})
	reconciled.Sampler = r.Sampler
	dropped := reconciled.KnownDropped()
	if dropped > 0 {
		reconciled.DropReason = r.DropReason
	}
	if r.Stages != nil {
		stages := *r.Stages
		stages.DuplicatesExact = false
		if dropped == 0 {
			stages.LostAt = ""
		}
		reconciled.Stages = &stages
	}
	return reconciled
}
