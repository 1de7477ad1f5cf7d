package model

// TargetHistory is one ledger target of a job, whose entries and errors across runs and
// generations are read by its fields.
type TargetHistory struct {
	JobName   string
	TargetKey string
}
