package batontype

// Item is one unit of a run's work: a step applied to a target.
type Item struct {
	// Target identifies what the step acts on (an account, a page, an order). With Step it
	// keys the ledger row and the idempotency key.
	Target string
	// Step names the action; empty for single-step jobs.
	Step string
	// Input is hashed (as JSON) into the ledger's input_hash; a changed input on a later run
	// is flagged.
	Input any
	// Checkpoint is the token the run resumes after once this item commits; empty keeps the
	// previous one.
	Checkpoint string
	// External marks a step with an effect outside Baton's database (a payment, an email).
	// Its intent is committed before the call, so a crash can never make the effect twice.
	External bool
	// Downstream names the outside system the step calls ("provider"): the call waits for
	// its turn under that downstream's cluster-wide rate, concurrency and quota limits, and
	// is held at the boundary while the downstream is paused. Empty means unlimited.
	Downstream string
}
