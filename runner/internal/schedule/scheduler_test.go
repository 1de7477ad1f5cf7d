package schedule_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/schedule"
	"github.com/baton-run/baton/runner/store"
)

// fakeStore serves one fixed schedule state and records the next fires set.
type fakeStore struct {
	st  store.ScheduleState
	mu  sync.Mutex
	set []store.NextFire
}

func (f *fakeStore) ScheduleState(context.Context) (*store.ScheduleState, error) {
	st := f.st
	return &st, nil
}

func (f *fakeStore) SetNextFires(_ context.Context, fires []store.NextFire) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, fires...)
	return int64(len(fires)), nil
}

type bundle struct {
	store *fakeStore
	sched *schedule.Scheduler
	mu    sync.Mutex
	fires []schedule.Fire
	err   error // what StartFunc returns
}

func setup(t *testing.T, st store.ScheduleState) *bundle {
	t.Helper()
	b := &bundle{store: &fakeStore{st: st}}
	b.sched = schedule.New(schedule.Config{
		Store: b.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: time.Minute,
		HasJobsFunc: func() bool { return true },
		ModeFunc: func(job string) (bt.Mode, bool) {
			return bt.ModeRestart, job != "elsewhere"
		},
		StartFunc: func(_ context.Context, f schedule.Fire) error {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.fires = append(b.fires, f)
			return b.err
		},
		RecoverFunc: func(context.Context) {},
	})
	return b
}

func TestPassFiresDueJobsWithTheirMissedFires(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	due := now.Add(-3 * time.Minute).Truncate(time.Minute)
	b := setup(t, store.ScheduleState{Now: now, Jobs: []store.ScheduledJob{
		{Name: "minutely", Cron: "* * * * *", Timezone: "UTC", Next: &due},
		{Name: "elsewhere", Cron: "* * * * *", Timezone: "UTC", Next: &due},
		{Name: "new", Cron: "0 * * * *", Timezone: "UTC"},
	}})
	wait := b.sched.Pass(context.Background())
	if len(b.fires) != 1 {
		t.Fatalf("fires %+v, want one (minutely; elsewhere runs on another instance)", b.fires)
	}
	f := b.fires[0]
	if f.Job != "minutely" || !f.Due.Equal(due) || !f.Next.Equal(now.Truncate(time.Minute).Add(time.Minute)) || len(f.Missed) != 3 {
		t.Fatalf("fire %+v: want due %s, next at the coming minute and the 3 passed minutes since missed", f, due)
	}
	if len(b.store.set) != 1 || b.store.set[0].Name != "new" || !b.store.set[0].At.Equal(now.Truncate(time.Hour).Add(time.Hour)) {
		t.Fatalf("next fires set %+v, want the next hour of job new", b.store.set)
	}
	if wait != 30*time.Second {
		t.Fatalf("wait %s, want 30s until the next minute", wait)
	}
}

func TestPassWaitsForASlotWhenEverySlotIsBusy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	due := now.Add(-time.Second)
	b := setup(t, store.ScheduleState{Now: now, Jobs: []store.ScheduledJob{{Name: "busy", Cron: "@daily", Timezone: "UTC", Next: &due}}})
	b.err = bt.Errorf(bt.CodeCapacityExceeded, "all slots busy")
	if wait := b.sched.Pass(context.Background()); wait > 500*time.Millisecond {
		t.Fatalf("wait %s, want a retry within half a second", wait)
	}
	if !b.sched.SlotWanted() {
		t.Fatal("a due fire that found every slot busy must be waiting for a slot")
	}
	b.sched.SlotFreed()
	if b.sched.SlotWanted() {
		t.Fatal("a freed slot must take the wait")
	}
}

func TestPassFiresNothingInMaintenance(t *testing.T) {
	t.Parallel()
	now := time.Now()
	due := now.Add(-time.Second)
	b := setup(t, store.ScheduleState{Now: now, Maintenance: true, Jobs: []store.ScheduledJob{{Name: "j", Cron: "* * * * *", Timezone: "UTC", Next: &due}}})
	if wait := b.sched.Pass(context.Background()); wait != time.Minute || len(b.fires) != 0 {
		t.Fatalf("wait %s, fires %+v; want the poll interval and no fire", wait, b.fires)
	}
}
