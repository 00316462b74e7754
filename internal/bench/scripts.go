package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// initApplicationName names the session of the scripts' init: no run's tag, so that its
// records are no run's.
const initApplicationName = "logbench-init"

// initLockKey serializes the inits of one database (pg_advisory_xact_lock): two runs
// starting at once on one cluster do not both run it.
const initLockKey = 7_640_211_505

// InitScripts runs init, the SQL of workload.scripts.init, through conn unless the
// database already ran that init: in one transaction with the record of its sha256 in
// logbench_init, so that a run retried after any failure, or started by a restarted
// operator, either finds the init done or runs it again from nothing, and a changed init
// runs anew. conn's role is the one the scripts run as, so that it owns what the init
// creates.
func InitScripts(ctx context.Context, conn *pgx.Conn, init string) error {
	sum := sha256.Sum256([]byte(init))
	digest := hex.EncodeToString(sum[:])
	if _, err := conn.Exec(ctx, "SET application_name TO '"+initApplicationName+"'"); err != nil {
		return fmt.Errorf("workload.scripts.init: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("workload.scripts.init: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var done bool
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(initLockKey))
	if err == nil {
		_, err = tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS logbench_init (
			sha256 text PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`)
	}
	if err == nil {
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT FROM logbench_init WHERE sha256 = $1)`, digest).Scan(&done)
	}
	if err != nil {
		return fmt.Errorf("workload.scripts.init: recording it in logbench_init: %w", err)
	}
	if done {
		return tx.Commit(ctx)
	}
	// Without arguments, pgx sends the init as one simple query: every statement of it.
	if _, err := tx.Exec(ctx, init); err != nil {
		return fmt.Errorf("workload.scripts.init failed, nothing of it kept: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO logbench_init (sha256) VALUES ($1)`, digest); err != nil {
		return fmt.Errorf("workload.scripts.init: recording it in logbench_init: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("workload.scripts.init: %w", err)
	}
	return nil
}
