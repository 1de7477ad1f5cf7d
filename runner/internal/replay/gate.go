package replay

import (
	"context"
	"fmt"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Gate refuses a manual RESTART that could repeat effects: REPLAY_BLOCKED while the
// current generation holds AMBIGUOUS_EFFECT or IN_FLIGHT targets, APPROVAL_REQUIRED for a
// HIGH-risk job. Either message names the way to go on. A job that has never run is not gated:
// there is nothing to repeat.
func (s *Service) Gate(ctx context.Context, job string) error { return restartGate(ctx, s, job, true) }

// InDoubtGate is the gate of a scheduled RESTART fire: Gate's REPLAY_BLOCKED (and
// ALREADY_RUNNING) without its HIGH-risk approval, which a HIGH-risk job's schedule got when
// it was set (a SCHEDULE request approved by a second person).
func (s *Service) InDoubtGate(ctx context.Context, job string) error {
	return restartGate(ctx, s, job, false)
}

// restartGate is Gate, with the HIGH-risk approval when approval is set.
func restartGate(ctx context.Context, s *Service, job string, approval bool) error {
	settings, err := s.cfg.Store.Job(ctx, job)
	if err != nil {
		return fmt.Errorf("restart gate of %s: %w", job, err)
	}
	source, err := s.restartSource(ctx, settings)
	if err != nil {
		return fmt.Errorf("restart gate of %s: %w", job, err)
	}
	if source == nil {
		return nil
	}
	gen := settings.CurrentGeneration
	counts, err := s.cfg.Store.LedgerCounts(ctx, job, gen, 0)
	if err != nil {
		return fmt.Errorf("restart gate of %s: %w", job, err)
	}
	amb, inFlight := counts[bt.LedgerAmbiguous], counts[bt.LedgerInFlight]
	if amb == 0 && inFlight > 0 {
		// IN_FLIGHT targets of a run still going are that run's: this start is refused as
		// ALREADY_RUNNING, as it would be without the gate.
		if active, err := s.cfg.Store.ActiveRun(ctx, job); err != nil {
			return fmt.Errorf("restart gate of %s: %w", job, err)
		} else if active != nil {
			return bt.Errorf(bt.CodeAlreadyRunning, "job %q already has an active run (%d)", job, active.ID)
		}
	}
	if amb > 0 || inFlight > 0 {
		return &bt.Error{Code: bt.CodeReplayBlocked, Field: "mode", Message: fmt.Sprintf(
			"RESTART of %s refused: generation %d holds %d AMBIGUOUS_EFFECT and %d IN_FLIGHT target(s), which a new generation would call again under new keys. "+
				"Settle them first (reconcileEntry or resolveAmbiguous; IN_FLIGHT targets become AMBIGUOUS_EFFECT once their run is found gone), "+
				"then RESTART again, or request it with the requestRestart mutation (baton jobs restart %s --request)", job, gen, amb, inFlight, job)}
	}
	if approval && settings.RiskLevel == bt.RiskHigh {
		return &bt.Error{Code: bt.CodeApprovalRequired, Field: "mode", Message: fmt.Sprintf(
			"RESTART of HIGH-risk job %s refused: it opens generation %d and calls every target again under new keys, so it needs a preflight and a second person's approval. "+
				"Request it with the requestRestart mutation, with a reason and a compensation reference (baton jobs restart %s --request --reason ... --compensation-ref ...); "+
				"RESUME continues generation %d without repeating effects", job, gen+1, job, gen)}
	}
	return nil
}
