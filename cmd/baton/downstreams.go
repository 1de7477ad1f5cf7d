package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

const downstreamsUsage = `usage:
  baton downstreams list
        every downstream: its limits and its calls over the last minute
  baton downstreams show NAME
        one downstream: its limits, the code's defaults, who changed them last, its calls
  baton downstreams set NAME [--rate R] [--burst B] [--concurrency C]
                        [--quota Q [--quota-window HOUR|DAY]] [--clear rate,concurrency,quota]
                        [--reason TEXT]
        change its limits for the whole cluster (every instance within a second); a flag
        not given leaves its limit as it is; --clear removes limits (rate with its burst,
        quota with its window). Zero, negative or out-of-range values are refused (exit 4)
  baton downstreams pause NAME [--reason TEXT]
        hold every call to it at its item boundary; runs wait, they do not fail
  baton downstreams resume NAME [--reason TEXT]
        let its calls go again

` + apiFlagsText

// downstreamFields asks for everything the CLI shows of a downstream.
const downstreamFields = `name version updatedAt updatedBy
	limits { ratePerSecond burst concurrency quota quotaWindow paused }
	defaults { ratePerSecond burst concurrency quota quotaWindow paused }
	stats { windowSeconds callsPerSecond calls throttled errors waits waitSeconds effectiveRate
		blockedUntil inFlight quotaUsed degraded }`

// downstreamLimitsJSON are a downstream's limits; null sets no limit of its kind.
type downstreamLimitsJSON struct {
	RatePerSecond *float64 `json:"ratePerSecond"`
	Burst         *int     `json:"burst"`
	Concurrency   *int     `json:"concurrency"`
	Quota         *int64   `json:"quota"`
	QuotaWindow   *string  `json:"quotaWindow"`
	Paused        bool     `json:"paused"`
}

// downstreamStatsJSON are a downstream's calls over the last windowSeconds, cluster-wide.
type downstreamStatsJSON struct {
	WindowSeconds  int      `json:"windowSeconds"`
	CallsPerSecond float64  `json:"callsPerSecond"`
	Calls          int64    `json:"calls"`
	Throttled      int64    `json:"throttled"`
	Errors         int64    `json:"errors"`
	Waits          int64    `json:"waits"`
	WaitSeconds    float64  `json:"waitSeconds"`
	EffectiveRate  *float64 `json:"effectiveRate"`
	BlockedUntil   *string  `json:"blockedUntil"`
	InFlight       int      `json:"inFlight"`
	QuotaUsed      int64    `json:"quotaUsed"`
	Degraded       bool     `json:"degraded"`
}

// downstreamJSON is a downstream as the API sends it and as --output json prints it (the
// CLI's contract with scripts: fields are added, never renamed or removed).
type downstreamJSON struct {
	Name      string               `json:"name"`
	Limits    downstreamLimitsJSON `json:"limits"`
	Defaults  downstreamLimitsJSON `json:"defaults"`
	Version   int64                `json:"version"`
	UpdatedAt *string              `json:"updatedAt"`
	UpdatedBy *string              `json:"updatedBy"`
	Stats     downstreamStatsJSON  `json:"stats"`
}

// downstreamsJSON is `downstreams list`.
type downstreamsJSON struct {
	Downstreams []downstreamJSON `json:"downstreams"`
}

// downstreamsCommand shows and changes the limits on calls to outside systems through the API.
func downstreamsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("downstreams", downstreamsUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	want := 1
	var set *downstreamSetFlags
	reason := new(string)
	switch sub {
	case "list":
		want = 0
	case "show":
	case "set":
		set = defineDownstreamSetFlags(fs)
		reason = set.reason
	case "pause", "resume":
		reason = fs.String("reason", "", "why, for the audit log")
	default:
		return unknownSubcommand("downstreams", sub, downstreamsUsage, stderr)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return parseFailed(err, downstreamsUsage, stdout, stderr)
	}
	if len(positional) != want {
		fmt.Fprint(stderr, downstreamsUsage)
		return usageErrorf("downstreams %s: want %d argument(s), got %d", sub, want, len(positional))
	}
	var in map[string]any
	switch sub {
	case "set":
		if in, err = set.input(fs, positional[0]); err != nil {
			fmt.Fprint(stderr, downstreamsUsage)
			return err
		}
	case "pause", "resume":
		in = map[string]any{"name": positional[0], "paused": sub == "pause", "reason": *reason}
	}
	c, err := api.client("downstreams " + sub)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return c.listDownstreams(ctx, api.json(), stdout)
	case "show":
		return c.showDownstream(ctx, positional[0], api.json(), stdout)
	}
	return c.updateDownstream(ctx, sub, in, api.json(), stdout)
}

// downstreamSetFlags are the flags of `downstreams set`.
type downstreamSetFlags struct {
	rate                  *float64
	burst, concurrency    *int
	quota                 *int64
	window, clear, reason *string
}

func defineDownstreamSetFlags(fs *flag.FlagSet) *downstreamSetFlags {
	return &downstreamSetFlags{
		rate:        fs.Float64("rate", 0, "calls per second (above 0, at most 100000)"),
		burst:       fs.Int("burst", 0, "calls at once above the rate (1 to 10000)"),
		concurrency: fs.Int("concurrency", 0, "calls in flight (1 to 10000)"),
		quota:       fs.Int64("quota", 0, "calls per quota window (1 to 1000000000)"),
		window:      fs.String("quota-window", "", "HOUR or DAY"),
		clear:       fs.String("clear", "", "comma-separated limits to remove: rate, concurrency, quota"),
		reason:      fs.String("reason", "", "why, for the audit log"),
	}
}

// input is the updateDownstream input of the flags given on the command line: only those, so
// the server leaves every other limit as it is. A window or a limit kind that is not one is a
// usage error; the server judges the numbers.
func (f *downstreamSetFlags) input(fs *flag.FlagSet, name string) (map[string]any, error) {
	in := map[string]any{"name": name}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "rate":
			in["ratePerSecond"] = *f.rate
		case "burst":
			in["burst"] = *f.burst
		case "concurrency":
			in["concurrency"] = *f.concurrency
		case "quota":
			in["quota"] = *f.quota
		}
	})
	if *f.window != "" {
		w := strings.ToUpper(*f.window)
		if w != "HOUR" && w != "DAY" {
			return nil, usageErrorf("downstreams set: --quota-window must be HOUR or DAY, not %q", *f.window)
		}
		in["quotaWindow"] = w
	}
	if *f.clear != "" {
		var kinds []string
		for _, k := range strings.Split(*f.clear, ",") {
			k = strings.ToUpper(strings.TrimSpace(k))
			if k != "RATE" && k != "CONCURRENCY" && k != "QUOTA" {
				return nil, usageErrorf("downstreams set: --clear takes rate, concurrency and quota, not %q", k)
			}
			kinds = append(kinds, k)
		}
		in["clear"] = kinds
	}
	if len(in) == 1 {
		return nil, usageErrorf("downstreams set %s: nothing to change (give --rate, --burst, --concurrency, --quota, --quota-window or --clear)", name)
	}
	in["reason"] = *f.reason
	return in, nil
}

func (c *apiClient) listDownstreams(ctx context.Context, asJSON bool, stdout io.Writer) error {
	var data downstreamsJSON
	if err := c.do(ctx, `query Downstreams { downstreams { `+downstreamFields+` } }`, nil, &data); err != nil {
		return err
	}
	if data.Downstreams == nil {
		data.Downstreams = []downstreamJSON{}
	}
	if asJSON {
		return writeJSON(stdout, data)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DOWNSTREAM\tSTATE\tRATE\tCONCURRENCY\tQUOTA\tCALLS/S\tLAST MINUTE")
	for _, d := range data.Downstreams {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t%s\n", d.Name, downstreamState(d), rateText(d), concurrencyText(d),
			quotaText(d), d.Stats.CallsPerSecond, callsText(d.Stats))
	}
	return tw.Flush()
}

func (c *apiClient) showDownstream(ctx context.Context, name string, asJSON bool, stdout io.Writer) error {
	var data struct {
		Downstream *downstreamJSON `json:"downstream"`
	}
	if err := c.do(ctx, `query Downstream($n: String!) { downstream(name: $n) { `+downstreamFields+` } }`, map[string]any{"n": name}, &data); err != nil {
		return err
	}
	if data.Downstream == nil {
		return &codedError{code: exitNotFound, err: fmt.Errorf("downstreams show: no downstream %q", name)}
	}
	if asJSON {
		return writeJSON(stdout, data.Downstream)
	}
	printDownstream(stdout, *data.Downstream)
	return nil
}

func (c *apiClient) updateDownstream(ctx context.Context, sub string, in map[string]any, asJSON bool, stdout io.Writer) error {
	var data struct {
		UpdateDownstream struct {
			Downstream *downstreamJSON `json:"downstream"`
			UserErrors []userErr       `json:"userErrors"`
		} `json:"updateDownstream"`
	}
	err := c.do(ctx, `mutation UpdateDownstream($in: UpdateDownstreamInput!) { updateDownstream(input: $in) {
		downstream { `+downstreamFields+` } userErrors { code message field } } }`, map[string]any{"in": in}, &data)
	if err != nil {
		return err
	}
	p := data.UpdateDownstream
	if err := userErrs(p.UserErrors); err != nil {
		return fmt.Errorf("downstreams %s %s: %w", sub, in["name"], err)
	}
	if p.Downstream == nil {
		return &codedError{code: exitAPI, err: fmt.Errorf("downstreams %s: the server returned no downstream", sub)}
	}
	if asJSON {
		return writeJSON(stdout, p.Downstream)
	}
	d := *p.Downstream
	fmt.Fprintf(stdout, "%s: %s, rate %s, concurrency %s, quota %s (version %d)\n", d.Name, downstreamState(d), rateText(d),
		concurrencyText(d), quotaText(d), d.Version)
	return nil
}

// printDownstream prints `downstreams show`.
func printDownstream(w io.Writer, d downstreamJSON) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "downstream\t%s\t\n", d.Name)
	fmt.Fprintf(tw, "state\t%s\t\n", downstreamState(d))
	fmt.Fprintf(tw, "\tnow\tcode's default\n")
	fmt.Fprintf(tw, "rate\t%s\t%s\n", rateText(d), rateLimitText(d.Defaults))
	fmt.Fprintf(tw, "concurrency\t%s\t%s\n", concurrencyText(d), limitText(d.Defaults.Concurrency))
	fmt.Fprintf(tw, "quota\t%s\t%s\n", quotaText(d), quotaLimitText(d.Defaults))
	changed := "never (the code's defaults hold)"
	if d.UpdatedBy != nil {
		changed = "by " + *d.UpdatedBy
		if d.UpdatedAt != nil {
			changed += " at " + *d.UpdatedAt
		}
	}
	fmt.Fprintf(tw, "changed\t%s (version %d)\t\n", changed, d.Version)
	s := d.Stats
	fmt.Fprintf(tw, "calls/s\t%.1f (last 10 s)\t\n", s.CallsPerSecond)
	fmt.Fprintf(tw, "last %ds\t%s\t\n", s.WindowSeconds, callsText(s))
	if s.BlockedUntil != nil {
		fmt.Fprintf(tw, "blocked until\t%s (Retry-After)\t\n", *s.BlockedUntil)
	}
	_ = tw.Flush()
}

// downstreamState is "running", "PAUSED", "DEGRADED" or both.
func downstreamState(d downstreamJSON) string {
	var s []string
	if d.Limits.Paused {
		s = append(s, "PAUSED")
	}
	if d.Stats.Degraded {
		s = append(s, "DEGRADED")
	}
	if len(s) == 0 {
		return "running"
	}
	return strings.Join(s, ",")
}

// rateText is "50/s burst 10", with the effective rate when pushback lowered it, or "-".
func rateText(d downstreamJSON) string {
	t := rateLimitText(d.Limits)
	if r, e := d.Limits.RatePerSecond, d.Stats.EffectiveRate; r != nil && e != nil && *e < *r {
		t += " (slowed by pushback to " + formatFloat(*e) + "/s)"
	}
	return t
}

// rateLimitText is "50/s burst 10", or "-" without a rate.
func rateLimitText(l downstreamLimitsJSON) string {
	if l.RatePerSecond == nil {
		return "-"
	}
	t := formatFloat(*l.RatePerSecond) + "/s"
	if l.Burst != nil {
		t += " burst " + strconv.Itoa(*l.Burst)
	}
	return t
}

// concurrencyText is "3/16 in flight", or "-" without a limit.
func concurrencyText(d downstreamJSON) string {
	if d.Limits.Concurrency == nil {
		if d.Stats.InFlight > 0 {
			return strconv.Itoa(d.Stats.InFlight) + " in flight"
		}
		return "-"
	}
	return fmt.Sprintf("%d/%d in flight", d.Stats.InFlight, *d.Limits.Concurrency)
}

// quotaText is "120/1000 per DAY" (used of the quota), or "-" without a quota.
func quotaText(d downstreamJSON) string {
	if d.Limits.Quota == nil {
		return "-"
	}
	return strconv.FormatInt(d.Stats.QuotaUsed, 10) + "/" + quotaLimitText(d.Limits)
}

// quotaLimitText is "1000 per DAY", or "-" without a quota.
func quotaLimitText(l downstreamLimitsJSON) string {
	if l.Quota == nil {
		return "-"
	}
	w := "HOUR"
	if l.QuotaWindow != nil {
		w = *l.QuotaWindow
	}
	return fmt.Sprintf("%d per %s", *l.Quota, w)
}

// callsText is "600 calls, 20 waited (1.2s), 0 throttled, 0 errors".
func callsText(s downstreamStatsJSON) string {
	return fmt.Sprintf("%d calls, %d waited (%.1fs), %d throttled, %d errors", s.Calls, s.Waits, s.WaitSeconds, s.Throttled, s.Errors)
}

func limitText(v *int) string {
	if v == nil {
		return "-"
	}
	return strconv.Itoa(*v)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
