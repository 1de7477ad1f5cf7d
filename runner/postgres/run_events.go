package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/baton-run/baton/runner/store"
)

// recordRunEvents is the tail of a statement whose CTE named cte returns the ids of the runs it
// changed: it records an event of kind for each, by the actor in parameter actorParam ("$2"),
// with detail (a constant). The change and its events commit together, in one statement.
func recordRunEvents(kind store.RunEventKind, cte, actorParam, detail string) string {
	return `INSERT INTO job_run_events (run_id, kind, actor, detail)
		SELECT id, '` + string(kind) + `', ` + actorParam + `, '` + detail + `' FROM ` + cte
}

const runEventColumns = `id, run_id, kind, shard, actor, detail, at`

func scanRunEvent(row pgx.Row) (store.RunEvent, error) {
	var e store.RunEvent
	var kind string
	err := row.Scan(&e.ID, &e.RunID, &kind, &e.Shard, &e.Actor, &e.Detail, &e.At)
	e.Kind = store.RunEventKind(kind)
	return e, err
}

// RunEventsOfRuns returns, for each of runIDs, its recorded events oldest first: all but the
// lease renewals, and the latest maxRenewals renewals. Per run, two index walks: (run_id, id)
// skipping renewals, and the partial index of renewals newest first.
func (s runStore) RunEventsOfRuns(ctx context.Context, runIDs []int64, maxRenewals int) (map[int64][]store.RunEvent, error) {
	rows, err := s.pool.Query(ctx, `SELECT e.* FROM unnest($1::bigint[]) AS k(run) CROSS JOIN LATERAL (
			(SELECT `+runEventColumns+` FROM job_run_events WHERE run_id = k.run AND kind <> 'LEASE_RENEWED')
			UNION ALL
			(SELECT `+runEventColumns+` FROM job_run_events WHERE run_id = k.run AND kind = 'LEASE_RENEWED' ORDER BY id DESC LIMIT $2)
		) e
		ORDER BY e.run_id, e.id`, runIDs, maxRenewals)
	events, err := collect(rows, err, "read events of runs", scanRunEvent)
	return grouped(events, err, func(e store.RunEvent) int64 { return e.RunID })
}
