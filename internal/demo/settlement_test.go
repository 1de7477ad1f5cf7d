package demo

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestSettlementTimeoutsLeaveConfirmedOrAmbiguous(t *testing.T) {
	b := setup(t)
	cfg := FastConfig()
	cfg.Provider.ServerErrorRate, cfg.Provider.ThrottleRate, cfg.Provider.TimeoutAfterApplyRate = 0.1, 0.1, 0.25
	jobs, provider := Jobs(b.Pool, cfg)
	settlement := jobs[2].(*settlementJob)
	if info := settlement.Info(); info.Name != SettlementJobName || info.Risk != bt.RiskHigh || info.Version != "1" {
		t.Fatalf("info %+v", info)
	}
	r := b.runner(jobs...)
	id := b.start(r, runner.StartParams{Job: SettlementJobName})
	got := b.waitStatus(r, id, bt.StatusSucceeded)

	noDuplicates := func() {
		t.Helper()
		if n := b.count(`SELECT count(*) FROM (SELECT idempotency_key FROM demo_provider_effects GROUP BY 1 HAVING count(*) > 1) d`); n != 0 {
			t.Fatalf("%d idempotency keys with more than one effect", n)
		}
		if n := b.count(`SELECT count(*) FROM demo_provider_effects e LEFT JOIN job_ledger l ON l.idempotency_key = e.idempotency_key
			WHERE l.state IS DISTINCT FROM 'CONFIRMED' AND l.state IS DISTINCT FROM 'AMBIGUOUS_EFFECT'`); n != 0 {
			t.Fatalf("%d effects whose target is neither CONFIRMED nor AMBIGUOUS_EFFECT", n)
		}
		if n := b.count(`SELECT count(*) FROM demo_provider_effects e JOIN job_ledger l ON l.idempotency_key = e.idempotency_key
			WHERE e.target_key <> l.target_key`); n != 0 {
			t.Fatalf("%d effects applied for another target than their key's", n)
		}
	}
	noDuplicates()
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE job_name = $1 AND step = 'pay' AND external`, SettlementJobName); n != 40 {
		t.Fatalf("%d ledger rows, want one per account (40)", n)
	}
	if n := b.count(`SELECT count(*) FROM job_ledger WHERE state = 'IN_FLIGHT'`); n != 0 {
		t.Fatalf("%d targets left IN_FLIGHT by a finished run", n)
	}
	// Every confirmed payment has exactly its effect, referenced in the ledger.
	confirmed := b.count(`SELECT count(*) FROM job_ledger WHERE state = 'CONFIRMED'`)
	if n := b.count(`SELECT count(*) FROM job_ledger l JOIN demo_provider_effects e ON e.idempotency_key = l.idempotency_key
		WHERE l.state = 'CONFIRMED' AND l.effect_ref = 'pay_' || e.id AND l.evidence_ref LIKE '%id=' || e.id || '%'`); n != confirmed || confirmed == 0 {
		t.Fatalf("%d of %d confirmed targets carry their effect's ref and evidence", n, confirmed)
	}
	// Every timeout after applying left its target ambiguous, with the effect made.
	ambiguous := b.count(`SELECT count(*) FROM job_ledger l JOIN demo_provider_effects e ON e.idempotency_key = l.idempotency_key
		WHERE l.state = 'AMBIGUOUS_EFFECT'`)
	if ambiguous == 0 || int64(ambiguous) != provider.Stats().TimedOutAfterApply || got.Ambiguous != int64(ambiguous) {
		t.Fatalf("%d ambiguous targets with an effect, run counted %d, provider timed out %d times; want equal and > 0",
			ambiguous, got.Ambiguous, provider.Stats().TimedOutAfterApply)
	}

	// Reconciliation finds each ambiguous payment; an unknown key is not applied.
	rows, err := b.Pool.Query(context.Background(), `SELECT target_key, step, idempotency_key FROM job_ledger WHERE state = 'AMBIGUOUS_EFFECT'`)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ target, step, key string }
	var entries []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.target, &e.step, &e.key); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	rows.Close()
	for _, e := range entries {
		got, err := settlement.Reconcile(context.Background(), e.target, e.step, e.key)
		if err != nil || !got.Applied || !strings.Contains(got.EvidenceRef, e.key) || !strings.HasPrefix(got.EffectRef, "pay_") {
			t.Fatalf("reconcile %s: %+v, %v; want applied with the payment's id and evidence", e.target, got, err)
		}
	}
	if got, err := settlement.Reconcile(context.Background(), "acct:9999", "pay", "bt_unknown"); err != nil || got.Applied {
		t.Fatalf("reconcile of a key never sent: %+v, %v", got, err)
	}

	// Walking every account again pays nobody twice: confirmed targets are skipped and
	// ambiguous ones stay quarantined.
	effects := b.count(`SELECT count(*) FROM demo_provider_effects`)
	transient := b.count(`SELECT count(*) FROM job_ledger WHERE state = 'TRANSIENT'`)
	again := b.start(r, runner.StartParams{Job: SettlementJobName, Mode: bt.ModeResume, FromStart: true})
	got = b.waitStatus(r, again, bt.StatusSucceeded)
	noDuplicates()
	if got.Skipped != int64(confirmed) || got.Ambiguous != int64(ambiguous) {
		t.Fatalf("second pass skipped %d and left %d ambiguous, want %d and %d", got.Skipped, got.Ambiguous, confirmed, ambiguous)
	}
	if n := b.count(`SELECT count(*) FROM demo_provider_effects`); n > effects+transient {
		t.Fatalf("%d effects after the second pass, want at most %d (only TRANSIENT targets may be paid)", n, effects+transient)
	}
}
