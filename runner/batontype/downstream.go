package batontype

import (
	"fmt"
	"time"
)

// QuotaWindow is the period a downstream's call quota counts over, aligned to UTC.
type QuotaWindow string

// Quota windows.
const (
	QuotaHour QuotaWindow = "HOUR"
	QuotaDay  QuotaWindow = "DAY"
)

// Duration returns the window's length; 0 for an unknown window.
func (w QuotaWindow) Duration() time.Duration {
	switch w {
	case QuotaHour:
		return time.Hour
	case QuotaDay:
		return 24 * time.Hour
	}
	return 0
}

// DownstreamLimits are the limits on calls to one outside system, held cluster-wide. A zero
// field sets no limit of its kind.
type DownstreamLimits struct {
	// RatePerSecond is the sustained rate of calls; Burst how many may start at once above it
	// (0 means 1 when RatePerSecond is set).
	RatePerSecond float64 `json:"ratePerSecond,omitempty"`
	Burst         int     `json:"burst,omitempty"`
	// Concurrency is the number of calls in flight at once.
	Concurrency int `json:"concurrency,omitempty"`
	// Quota is the number of calls per QuotaWindow (HOUR when empty).
	Quota       int64       `json:"quota,omitempty"`
	QuotaWindow QuotaWindow `json:"quotaWindow,omitempty"`
	// Paused holds every call to the downstream at the boundary, before its intent is
	// committed, without failing the runs that wait.
	Paused bool `json:"paused,omitempty"`
}

// Downstream declares an outside system a job's steps call, with the limits its calls start
// under. Like a job's cron, Defaults are used the first time the downstream is seen; from
// then on operators change the limits at runtime.
type Downstream struct {
	Name     string
	Defaults DownstreamLimits
}

// DownstreamState is a downstream as the cluster holds it: its limits now, where they came
// from, and what its calls are doing.
type DownstreamState struct {
	Name      string
	Limits    DownstreamLimits
	Defaults  DownstreamLimits // the code's, as first declared
	Version   int64            // rises with every change
	UpdatedAt time.Time
	UpdatedBy string // "" while the code's defaults hold
	Stats     DownstreamStats
}

// DownstreamStats are a downstream's calls, cluster-wide, over the recent past.
type DownstreamStats struct {
	// Window is how far back the figures reach (the last minute).
	Window time.Duration
	// CallsPerSecond is the rate of calls started over the last 10 seconds.
	CallsPerSecond float64
	// Calls, Throttled (answered 429/503) and Errors (any other failure) over Window; Waits
	// counts calls that waited for their turn and WaitSeconds the time they waited in all.
	Calls, Throttled, Errors, Waits int64
	WaitSeconds                     float64
	// EffectiveRate is the rate calls start at now: RatePerSecond lowered by pushback and
	// recovering; 0 when no rate is set.
	EffectiveRate float64
	// BlockedUntil is set while a Retry-After holds every call.
	BlockedUntil *time.Time
	// InFlight is the number of concurrency slots held now.
	InFlight int
	// QuotaUsed counts calls in the current quota window.
	QuotaUsed int64
	// Degraded reports an instance limiting on its local share because Redis is unreachable.
	Degraded bool
}

// DownstreamUpdate changes a downstream's limits. A nil field is left as it is; Clear removes
// limits (RATE, CONCURRENCY, QUOTA). Every value must be positive: a limit of zero is
// spelled Clear.
type DownstreamUpdate struct {
	Name          string
	RatePerSecond *float64
	Burst         *int
	Concurrency   *int
	Quota         *int64
	QuotaWindow   *QuotaWindow
	Paused        *bool
	Clear         []DownstreamLimit
	Reason        string
}

// DownstreamLimit names a kind of limit, for DownstreamUpdate.Clear.
type DownstreamLimit string

// Limit kinds.
const (
	LimitRate        DownstreamLimit = "RATE"
	LimitConcurrency DownstreamLimit = "CONCURRENCY"
	LimitQuota       DownstreamLimit = "QUOTA"
)

// The bounds of a downstream's limits. A larger value is refused with INVALID_INPUT: it is
// almost surely a typo, and a burst that large is no limit at all.
const (
	MaxDownstreamRate        = 100000.0
	MaxDownstreamBurst       = 10000
	MaxDownstreamConcurrency = 10000
	MaxDownstreamQuota       = int64(1_000_000_000)
	MaxDownstreamNameLen     = 100
)

// AlertDownstreamDegraded: an instance limits a downstream on its local share of the limit
// because Redis is unreachable.
const AlertDownstreamDegraded AlertKind = "DOWNSTREAM_LIMIT_DEGRADED"

// CheckName refuses the name of a job or a downstream (kind) that is empty, longer than 100
// characters, or holds anything but letters, digits, '-', '_' and '.'.
func CheckName(kind, name string) error {
	if name == "" || len(name) > 100 {
		return &Error{Code: CodeInvalidInput, Field: "name", Message: fmt.Sprintf("a %s name is 1 to 100 characters", kind)}
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return &Error{Code: CodeInvalidInput, Field: "name", Message: fmt.Sprintf("%s name %q may hold only letters, digits, '-', '_' and '.'", kind, name)}
		}
	}
	return nil
}
