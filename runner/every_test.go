package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

// An @every interval under a second, zero, negative or not whole seconds is refused with
// INVALID_CRON naming the field and the allowed range, and nothing is written: the cron library
// would fire it every second. A job declaring one in code is refused at registration.
func TestEveryIntervalIsRefusedOutOfRange(t *testing.T) {
	b := setup(t)
	job := newItemsJob("flaky", 1)
	job.cron = "@daily"
	r := b.runner(nil, job)
	ctx := context.Background()
	for _, spec := range []string{"@every 0s", "@every -5s", "@every 1ms", "@every 500ms", "@every 1.5s"} {
		cron, on := spec, true
		_, err := r.Jobs().UpdateSchedule(ctx, "flaky", runner.ScheduleUpdate{Cron: &cron, Enabled: &on, Actor: "ops"})
		var be *bt.Error
		if code(err) != bt.CodeInvalidCron || !errors.As(err, &be) || be.Field != "cron" || !strings.Contains(be.Message, "1s to 8760h") {
			t.Errorf("cron %q: %v; want INVALID_CRON on cron naming 1s to 8760h", spec, err)
		}
		if _, err := r.Jobs().NextFires(ctx, spec, "", 3); code(err) != bt.CodeInvalidCron {
			t.Errorf("preview of %q: %v; want INVALID_CRON", spec, err)
		}
	}
	j, err := r.Jobs().Get(ctx, "flaky")
	if err != nil {
		t.Fatal(err)
	}
	if j.Cron != "@daily" || j.Version != 1 {
		t.Fatalf("a refused update changed the job: %+v", j)
	}

	declared := newItemsJob("declared", 1)
	declared.cron = "@every 0s"
	if err := r.Register(ctx, declared); code(err) != bt.CodeInvalidCron {
		t.Fatalf("registering a job declaring @every 0s: %v, want INVALID_CRON", err)
	}
}
