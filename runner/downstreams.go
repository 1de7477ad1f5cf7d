package runner

import (
	"context"
	"fmt"
	"math"
	"slices"

	bt "github.com/baton-run/baton/runner/batontype"
)

// DownstreamService reads and changes the limits on calls to outside systems, which hold
// cluster-wide (Item.Downstream, JobInfo.Downstreams). Get it with Runner.Downstreams.
type DownstreamService struct{ r *Runner }

// Downstreams returns the downstream service.
func (r *Runner) Downstreams() *DownstreamService { return &DownstreamService{r} }

// List returns every downstream the cluster knows, by name, with its limits and its calls
// over the last minute, cluster-wide.
func (s *DownstreamService) List(ctx context.Context) ([]bt.DownstreamState, error) {
	rows, err := s.r.store.Downstreams(ctx)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		s.r.ds.stats(ctx, &rows[i])
	}
	return rows, nil
}

// Get returns one downstream. NOT_FOUND: the cluster knows no downstream of that name.
func (s *DownstreamService) Get(ctx context.Context, name string) (*bt.DownstreamState, error) {
	rows, err := s.r.store.Downstreams(ctx)
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if rows[i].Name == name {
			s.r.ds.stats(ctx, &rows[i])
			return &rows[i], nil
		}
	}
	return nil, bt.Errorf(bt.CodeNotFound, "no downstream %q: a job declares a downstream (JobInfo.Downstreams) or names it on an item", name)
}

// Update changes a downstream's limits for the whole cluster: every instance applies the
// change within a second. The change is audited. INVALID_INPUT (with Field): a value out of
// range, zero or negative; NOT_FOUND: no downstream of that name. A refused update changes
// nothing.
func (s *DownstreamService) Update(ctx context.Context, actor string, u bt.DownstreamUpdate) (*bt.DownstreamState, error) {
	r := s.r
	args := updateArgs(u)
	target := "downstream:" + u.Name
	if err := checkUpdate(u); err != nil {
		r.audit(ctx, actor, "updateDownstream", target, args, err)
		return nil, err
	}
	d, err := r.store.UpdateDownstream(ctx, u.Name, actorOr(actor), func(l *bt.DownstreamLimits) error { return applyUpdate(l, u) })
	if err == bt.ErrNotFound {
		err = bt.Errorf(bt.CodeNotFound, "no downstream %q", u.Name)
	}
	r.audit(ctx, actor, "updateDownstream", target, args, err)
	if err != nil {
		return nil, err
	}
	_ = r.ds.refresh(ctx) // this instance at once, the others when they hear of it
	r.ds.announce(ctx, u.Name)
	r.ds.stats(ctx, d)
	return d, nil
}

func invalidDownstream(field, format string, a ...any) error {
	return &bt.Error{Code: bt.CodeInvalidInput, Field: field, Message: fmt.Sprintf(format, a...)}
}

// checkUpdate refuses an update whose values are out of range on their own.
func checkUpdate(u bt.DownstreamUpdate) error {
	if u.Name == "" || len(u.Name) > bt.MaxDownstreamNameLen {
		return invalidDownstream("name", "a downstream name is 1 to %d characters", bt.MaxDownstreamNameLen)
	}
	if u.RatePerSecond == nil && u.Burst == nil && u.Concurrency == nil && u.Quota == nil && u.QuotaWindow == nil && u.Paused == nil && len(u.Clear) == 0 {
		return invalidDownstream("input", "the update changes nothing: give a limit, a pause, or limits to clear")
	}
	if v := u.RatePerSecond; v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v <= 0 || *v > bt.MaxDownstreamRate) {
		return invalidDownstream("ratePerSecond", "the rate is more than 0 and at most %g calls per second (clear RATE to remove it), not %g", bt.MaxDownstreamRate, *v)
	}
	if v := u.Burst; v != nil && (*v < 1 || *v > bt.MaxDownstreamBurst) {
		return invalidDownstream("burst", "the burst is 1 to %d calls, not %d", bt.MaxDownstreamBurst, *v)
	}
	if v := u.Concurrency; v != nil && (*v < 1 || *v > bt.MaxDownstreamConcurrency) {
		return invalidDownstream("concurrency", "the concurrency is 1 to %d calls in flight (clear CONCURRENCY to remove it), not %d", bt.MaxDownstreamConcurrency, *v)
	}
	if v := u.Quota; v != nil && (*v < 1 || *v > bt.MaxDownstreamQuota) {
		return invalidDownstream("quota", "the quota is 1 to %d calls per window (clear QUOTA to remove it), not %d", bt.MaxDownstreamQuota, *v)
	}
	if v := u.QuotaWindow; v != nil && v.Duration() == 0 {
		return invalidDownstream("quotaWindow", "the quota window is HOUR or DAY, not %q", *v)
	}
	for _, k := range u.Clear {
		set := map[bt.DownstreamLimit]bool{bt.LimitRate: u.RatePerSecond != nil || u.Burst != nil,
			bt.LimitConcurrency: u.Concurrency != nil, bt.LimitQuota: u.Quota != nil || u.QuotaWindow != nil}
		switch {
		case k != bt.LimitRate && k != bt.LimitConcurrency && k != bt.LimitQuota:
			return invalidDownstream("clear", "a limit to clear is RATE, CONCURRENCY or QUOTA, not %q", k)
		case set[k]:
			return invalidDownstream("clear", "%s is both set and cleared", k)
		}
	}
	return nil
}

// applyUpdate makes the update of the current limits, refusing a result that does not hold
// together.
func applyUpdate(l *bt.DownstreamLimits, u bt.DownstreamUpdate) error {
	if slices.Contains(u.Clear, bt.LimitRate) {
		l.RatePerSecond, l.Burst = 0, 0
	}
	if slices.Contains(u.Clear, bt.LimitConcurrency) {
		l.Concurrency = 0
	}
	if slices.Contains(u.Clear, bt.LimitQuota) {
		l.Quota = 0
	}
	if u.RatePerSecond != nil {
		l.RatePerSecond = *u.RatePerSecond
		if l.Burst == 0 {
			l.Burst = 1
		}
	}
	if u.Burst != nil {
		if l.RatePerSecond == 0 {
			return invalidDownstream("burst", "a burst needs a rate: set ratePerSecond too")
		}
		l.Burst = *u.Burst
	}
	if u.Concurrency != nil {
		l.Concurrency = *u.Concurrency
	}
	if u.Quota != nil {
		l.Quota = *u.Quota
	}
	if u.QuotaWindow != nil {
		l.QuotaWindow = *u.QuotaWindow
	}
	if u.Paused != nil {
		l.Paused = *u.Paused
	}
	return nil
}

// checkDefaults refuses a job's declared downstream whose name or limits could not be set
// at runtime either.
func checkDefaults(d bt.Downstream) error {
	if err := bt.CheckName("downstream", d.Name); err != nil {
		return err
	}
	l := d.Defaults
	u := bt.DownstreamUpdate{Name: d.Name, Paused: &l.Paused}
	if l.RatePerSecond != 0 {
		u.RatePerSecond = &l.RatePerSecond
	}
	if l.Burst != 0 {
		u.Burst = &l.Burst
	}
	if l.Concurrency != 0 {
		u.Concurrency = &l.Concurrency
	}
	if l.Quota != 0 {
		u.Quota = &l.Quota
	}
	if l.QuotaWindow != "" {
		u.QuotaWindow = &l.QuotaWindow
	}
	if err := checkUpdate(u); err != nil {
		return fmt.Errorf("downstream %q: %w", d.Name, err)
	}
	if l.Burst != 0 && l.RatePerSecond == 0 {
		return fmt.Errorf("downstream %q: %w", d.Name, invalidDownstream("burst", "a burst needs a rate"))
	}
	return nil
}

// updateArgs is the update as the audit log records it.
func updateArgs(u bt.DownstreamUpdate) map[string]any {
	args := map[string]any{"name": u.Name}
	if u.RatePerSecond != nil {
		args["ratePerSecond"] = *u.RatePerSecond
	}
	if u.Burst != nil {
		args["burst"] = *u.Burst
	}
	if u.Concurrency != nil {
		args["concurrency"] = *u.Concurrency
	}
	if u.Quota != nil {
		args["quota"] = *u.Quota
	}
	if u.QuotaWindow != nil {
		args["quotaWindow"] = string(*u.QuotaWindow)
	}
	if u.Paused != nil {
		args["paused"] = *u.Paused
	}
	if len(u.Clear) > 0 {
		args["clear"] = u.Clear
	}
	if u.Reason != "" {
		args["reason"] = u.Reason
	}
	return args
}
