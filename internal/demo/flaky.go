package demo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/baton-run/baton/runner"
)

// FlakyConfig configures demo-flaky.
type FlakyConfig struct {
	// Items is the number of records; 0 means 200.
	Items int
	// ItemLatency is how long handling one record takes; 0 means 100ms, Off none.
	ItemLatency time.Duration
	// Cron is the job's default schedule; "" means manual only.
	Cron string
}

func (c FlakyConfig) withDefaults() FlakyConfig {
	if c.Items <= 0 {
		c.Items = 200
	}
	c.ItemLatency = durationOr(c.ItemLatency, 100*time.Millisecond)
	return c
}

// flakyJob is demo-flaky: records 1..Items, each failing (or not) in a way fixed by its
// number, so one run leaves a ledger with every failure class and an error table to look at.
type flakyJob struct {
	cfg FlakyConfig
}

func newFlakyJob(cfg FlakyConfig) *flakyJob { return &flakyJob{cfg: cfg.withDefaults()} }

func (j *flakyJob) Info() runner.JobInfo {
	return runner.JobInfo{
		Name:        FlakyJobName,
		Description: fmt.Sprintf("Handles %d records, some rejected, conflicting, blocked by policy, briefly unavailable, or hitting a bug.", j.cfg.Items),
		Cron:        j.cfg.Cron,
		Version:     "1",
	}
}

// fate is what happens to a record.
type fate int

const (
	fateOK            fate = iota
	fateTransientOnce      // fails TRANSIENT on its first attempt, succeeds on the retry
	fateInvalid            // refused before any call: VALIDATION_REJECTED
	fateConflict           // CONFLICT
	fatePolicy             // POLICY_BLOCKED
	fateBug                // the same unclassified error every time: BUG_SUSPECTED after 3 attempts
)

// flakyBugRecord is the record that always fails the same unclassified way.
const flakyBugRecord = 17

func flakyFate(i int) fate {
	switch {
	case i == flakyBugRecord:
		return fateBug
	case i%50 == 20:
		return fatePolicy
	case i%10 == 3:
		return fateInvalid
	case i%16 == 9:
		return fateConflict
	case i%7 == 0:
		return fateTransientOnce
	default:
		return fateOK
	}
}

// flakyRecord is a record's input, hashed into the ledger.
type flakyRecord struct {
	ID    int  `json:"id"`
	Valid bool `json:"valid"`
}

func (j *flakyJob) Run(ctx context.Context, run *runner.Run) error {
	start := afterNumbered(run.Checkpoint(), "rec:") + 1
	if err := run.SetTotal(ctx, int64(max(j.cfg.Items-start+1, 0))); err != nil {
		return err
	}
	for i := start; i <= j.cfg.Items; i++ {
		f := flakyFate(i)
		target := fmt.Sprintf("rec:%04d", i)
		item := runner.Item{Target: target, Input: flakyRecord{ID: i, Valid: f != fateInvalid}, Checkpoint: target}
		if f == fateInvalid {
			// Found bad by the job itself: recorded without a call.
			if err := run.Fail(ctx, item, runner.Rejected(fmt.Errorf("record %d is invalid: currency missing", i))); err != nil {
				return err
			}
			continue
		}
		err := run.Process(ctx, item, func(ctx context.Context, a *runner.Attempt) error {
			if err := wait(ctx, j.cfg.ItemLatency); err != nil {
				return err
			}
			switch f {
			case fateTransientOnce:
				if a.Number == 1 {
					return runner.Transient(fmt.Errorf("record %d: downstream busy (503), try again", i))
				}
			case fateConflict:
				return runner.Conflict(fmt.Errorf("record %d was changed by someone else (version %d, expected %d)", i, 3, 2))
			case fatePolicy:
				return runner.Policy(fmt.Errorf("record %d: amount above the daily limit", i))
			case fateBug:
				return fmt.Errorf("record %d: mapper: unexpected nil field %q", i, "currency")
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// afterNumbered returns n from a checkpoint "<prefix><n>", or 0 (start from the beginning)
// for any other checkpoint.
func afterNumbered(checkpoint, prefix string) int {
	num, ok := strings.CutPrefix(checkpoint, prefix)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
