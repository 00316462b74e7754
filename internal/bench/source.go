package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/logbench/logbench/logbench_counter/countersql"
)

// Source counts inside the server the records it sent to its log for the sessions of a
// tag: the logbench_counter extension. With a source, a run's expected records are the
// server's own count rather than the model's prediction.
type Source interface {
	// Count returns the records the server has logged so far for the sessions named
	// tag, and when its counting started.
	Count(ctx context.Context, tag string) (SourceCount, error)
	// Sessions returns how many sessions named tag the server still has.
	Sessions(ctx context.Context, tag string) (int64, error)
}

// SourceCount is one reading of a Source.
type SourceCount struct {
	Records int64
	// Since is when the counts started: the server's start, or its reinitialization
	// after a crash. Two readings are comparable only when it is the same.
	Since time.Time
}

// Minus subtracts an earlier reading: the records logged between the two. It fails when
// the server started counting anew in between (a crash restart), which lost the counts.
func (c SourceCount) Minus(earlier SourceCount) (int64, error) {
	if !c.Since.Equal(earlier.Since) {
		return 0, fmt.Errorf("the server's count of log records started anew during the run (at %s, after %s): "+
			"it restarted, and the run's records were not all counted", c.Since.Format(time.RFC3339Nano),
			earlier.Since.Format(time.RFC3339Nano))
	}
	return c.Records - earlier.Records, nil
}

// SourceOver reads the logbench_counter extension through conn, a session of a role
// that may execute its functions (pg_read_all_stats or a superuser).
func SourceOver(conn *pgx.Conn) Source { return sqlSource{conn: conn} }

type sqlSource struct{ conn *pgx.Conn }

// The queries below never hold a run's tag, not even as a parameter: the server may log
// them (a sample of statements, auto_explain's plans with their parameters), and a
// destination's counter takes any record naming the tag for one of the run's. They read
// every name and pick the tag's here.

// countQuery reads the counts of every name: a destination counts a run's records
// whatever their level, and names that found the counter's table full count under NULL.
const countQuery = `SELECT ` + countersql.Schema + `.counting_since(), application_name, sum(records)::bigint
	FROM ` + countersql.Schema + `.records() GROUP BY application_name`

// errCounterFull: the counter's table of names is full and the tag is not in it, so
// its records count under no name.
var errCounterFull = errors.New("the server's count of log records by application_name is full " +
	"(logbench_counter.max_application_names): the records of later runs are not counted by name; " +
	"restart the server with a larger table")

func (s sqlSource) Count(ctx context.Context, tag string) (SourceCount, error) {
	var count SourceCount
	full, listed := false, false
	rows, err := s.conn.Query(ctx, countQuery)
	if err == nil {
		var name *string
		var records int64
		_, err = pgx.ForEachRow(rows, []any{&count.Since, &name, &records}, func() error {
			switch {
			case name == nil:
				full = true
			case *name == tag:
				count.Records, listed = records, true
			}
			return nil
		})
	}
	if err == nil && count.Since.IsZero() {
		// records() returned no row: the server logged nothing yet; its start is still
		// when counting began.
		err = s.conn.QueryRow(ctx, `SELECT `+countersql.Schema+`.counting_since()`).Scan(&count.Since)
	}
	if err != nil {
		return SourceCount{}, fmt.Errorf("reading the server's count of log records (logbench_counter): %w", err)
	}
	if full && !listed {
		return SourceCount{}, errCounterFull
	}
	return count, nil
}

func (s sqlSource) Sessions(ctx context.Context, tag string) (int64, error) {
	rows, err := s.conn.Query(ctx, "SELECT application_name FROM pg_stat_activity")
	if err != nil {
		return 0, fmt.Errorf("counting the run's sessions: %w", err)
	}
	var sessions int64
	var name *string
	_, err = pgx.ForEachRow(rows, []any{&name}, func() error {
		if name != nil && *name == tag {
			sessions++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting the run's sessions: %w", err)
	}
	return sessions, nil
}

// InstallSourceFunctions creates the logbench_counter extension's functions, bound to
// the library at libraryPath (without its suffix), through conn, a superuser's session
// of a server that preloads that library, and checks that they count.
func InstallSourceFunctions(ctx context.Context, conn *pgx.Conn, libraryPath string) error {
	if _, err := conn.Exec(ctx, countersql.FunctionsSQL(libraryPath)); err != nil {
		return fmt.Errorf("creating logbench_counter's functions: %w", err)
	}
	if _, err := SourceOver(conn).Count(ctx, ""); err != nil {
		return err
	}
	return nil
}

// sessionPoll is how often the run's sessions are looked for once pgbench has ended.
const sessionPoll = 10 * time.Millisecond

// errSessionsRemain: the run's sessions outlived pgbench until the drain's deadline.
var errSessionsRemain = errors.New("the run's sessions were still on the server when the drain's deadline passed")

// awaitSessionsEnd waits until the server has no session named tag, or the deadline
// passes: pgbench has closed its connections, but a backend logs its disconnection
// record as it exits, after its client has gone.
func awaitSessionsEnd(ctx context.Context, source Source, tag string, deadline time.Time, clock Clock) error {
	for {
		sessions, err := source.Sessions(ctx, tag)
		if err != nil || sessions == 0 {
			return err
		}
		if !clock.Now().Before(deadline) {
			return fmt.Errorf("%w (%d of them)", errSessionsRemain, sessions)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-clock.After(sessionPoll):
		}
	}
}
