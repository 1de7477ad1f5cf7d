package postgres

import (
	"fmt"

	"github.com/jackc/pgx/v5"
)

// collect reads every row of a query with scan, the one function that reads that row type
// (scanRun, scanLedger, scanJob, ...): each row type is read one way, whether by QueryRow or by a
// list. err is the query's own error; either is wrapped with what.
func collect[T any](rows pgx.Rows, err error, what string, scan func(pgx.Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// scanOne reads a row of one column.
func scanOne[T any](row pgx.Row) (T, error) {
	var v T
	err := row.Scan(&v)
	return v, err
}

// keyed returns the rows of a collect by key; a later row with the same key wins.
func keyed[K comparable, T any](rows []T, err error, key func(T) K) (map[K]T, error) {
	if err != nil {
		return nil, err
	}
	out := make(map[K]T, len(rows))
	for _, r := range rows {
		out[key(r)] = r
	}
	return out, nil
}

// grouped returns the rows of a collect by key, in their order.
func grouped[K comparable, T any](rows []T, err error, key func(T) K) (map[K][]T, error) {
	if err != nil {
		return nil, err
	}
	out := map[K][]T{}
	for _, r := range rows {
		out[key(r)] = append(out[key(r)], r)
	}
	return out, nil
}
