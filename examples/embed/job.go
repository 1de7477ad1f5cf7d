package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/baton-run/baton/runner"
)

// greeter greets each of 50 customers, one item each, and resumes after its checkpoint.
type greeter struct{}

func (greeter) Info() runner.JobInfo {
	return runner.JobInfo{
		Name:        "greet-customers",
		Description: "Greets every customer (example job).",
		Cron:        "0 0 4 * * *", // 04:00 daily; 5 fields, 6 fields (seconds first) or @daily
		Timezone:    "Asia/Seoul",
		Lease:       30 * time.Second, // how long it may go without reaching a safe point
		Risk:        runner.RiskLow,
		Version:     "1",
	}
}

func (greeter) Run(ctx context.Context, run *runner.Run) error {
	start := 1 // a RESTART has no checkpoint: it starts at the first customer
	if cp := run.Checkpoint(); cp != "" {
		n, err := strconv.Atoi(cp)
		if err != nil {
			return fmt.Errorf("bad checkpoint %q: %w", cp, err)
		}
		start = n + 1
	}
	const customers = 50
	if err := run.SetTotal(ctx, customers); err != nil {
		return err
	}
	for i := start; i <= customers; i++ {
		item := runner.Item{Target: fmt.Sprintf("customer:%d", i), Step: "greet",
			Checkpoint: strconv.Itoa(i), External: true}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			// Call the outside world here with a.IdempotencyKey, honouring ctx (it ends with
			// the lease); an unclassified error on an External step is quarantined as
			// AMBIGUOUS_EFFECT. Writes of your own go in a.Tx, the item's transaction.
			select {
			case <-ctx.Done():
				return runner.Transient(ctx.Err())
			case <-time.After(20 * time.Millisecond): // the greeting is sent
			}
			a.SetEffectRef("greeting-" + a.IdempotencyKey)
			return nil
		})
		if err != nil {
			return err // asked to stop (cancel, pause, shutdown) or lease lost: return it
		}
	}
	return nil
}
