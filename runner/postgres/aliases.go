package postgres

import "github.com/baton-run/baton/runner/store"

// The store's values by their former names here, for code not yet moved to runner/store.

type (
	Fence            = store.Fence
	LeaseState       = store.LeaseState
	LedgerWrite      = store.LedgerWrite
	ItemsWrite       = store.ItemsWrite
	RunDelta         = store.RunDelta
	TxFunc           = store.TxFunc
	LedgerRow        = store.LedgerRow
	TargetStep       = store.TargetStep
	StagedWrite      = store.StagedWrite
	LedgerQuery      = store.LedgerQuery
	AuditRecord      = store.AuditRecord
	ReplayDecision   = store.ReplayDecision
	AlertRows        = store.AlertRows
	ReconcileLease   = store.ReconcileLease
	ReconcileFence   = store.ReconcileFence
	ReconcileOutcome = store.ReconcileOutcome
	PruneTable       = store.PruneTable
	NewRun           = store.NewRun
	RunFilter        = store.RunFilter
	ExpiredRun       = store.ExpiredRun
	JobDefaults      = store.JobDefaults
	SchedulePatch    = store.SchedulePatch
	NextFire         = store.NextFire
	ScheduleState    = store.ScheduleState
	ScheduledJob     = store.ScheduledJob
	CountsKey        = store.CountsKey
	CallCounts       = store.CallCounts
	WriteKind        = store.WriteKind
	Rule             = store.Rule
)

const (
	WriteResult     = store.WriteResult
	WriteIntent     = store.WriteIntent
	WriteSkip       = store.WriteSkip
	WriteFail       = store.WriteFail
	WriteQuarantine = store.WriteQuarantine
	WriteResolve    = store.WriteResolve

	Allowed   = store.Allowed
	Refused   = store.Refused
	OwnIntent = store.OwnIntent
	InScope   = store.InScope

	PruneRuns           = store.PruneRuns
	PruneRunErrors      = store.PruneRunErrors
	PruneScheduleEvents = store.PruneScheduleEvents
	PruneCallStats      = store.PruneCallStats
	PruneAuditLog       = store.PruneAuditLog
)

var (
	ErrFireTaken = store.ErrFireTaken
	WriteKinds   = store.WriteKinds
	LedgerStates = store.LedgerStates
	Transition   = store.Transition
)
