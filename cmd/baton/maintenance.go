package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

const maintenanceUsage = `usage:
  baton maintenance status
        whether the cluster-wide maintenance pause is on
  baton maintenance on
        pause the cluster: active runs stop at their next item boundary with status
        PAUSED; no run starts
  baton maintenance off
        lift the pause: schedules restart from now; runs maintenance paused continue
        with RESUME runs (printed)

` + apiFlagsText

// maintenanceCommand shows and sets the cluster-wide maintenance pause through the API.
func maintenanceCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("maintenance", maintenanceUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	switch sub {
	case "status", "on", "off":
	default:
		return unknownSubcommand("maintenance", sub, maintenanceUsage, stderr)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return parseFailed(err, maintenanceUsage, stdout, stderr)
	}
	if len(positional) != 0 {
		fmt.Fprint(stderr, maintenanceUsage)
		return usageErrorf("maintenance %s: unexpected argument %q", sub, positional[0])
	}
	c, err := api.client("maintenance " + sub)
	if err != nil {
		return err
	}
	if sub == "status" {
		var data struct {
			Maintenance bool `json:"maintenance"`
		}
		if err := c.do(ctx, `query Maintenance { maintenance }`, nil, &data); err != nil {
			return err
		}
		if api.json() {
			return writeJSON(stdout, maintenanceJSON{Maintenance: data.Maintenance, ResumedRuns: []int64{}})
		}
		fmt.Fprintf(stdout, "maintenance %s\n", onOff(data.Maintenance))
		return nil
	}
	var data struct {
		SetMaintenance struct {
			Maintenance *bool      `json:"maintenance"`
			ResumedRuns []*wireRun `json:"resumedRuns"`
			UserErrors  []userErr  `json:"userErrors"`
		} `json:"setMaintenance"`
	}
	err = c.do(ctx, `mutation SetMaintenance($in: SetMaintenanceInput!) { setMaintenance(input: $in) {
		maintenance resumedRuns { id jobName } userErrors { code message field } } }`,
		map[string]any{"in": map[string]any{"paused": sub == "on"}}, &data)
	if err != nil {
		return err
	}
	p := data.SetMaintenance
	if err := userErrs(p.UserErrors); err != nil {
		return fmt.Errorf("maintenance %s: %w", sub, err)
	}
	on := p.Maintenance != nil && *p.Maintenance
	if api.json() {
		out := maintenanceJSON{Maintenance: on, ResumedRuns: []int64{}}
		for _, r := range p.ResumedRuns {
			out.ResumedRuns = append(out.ResumedRuns, runNum(r.ID))
		}
		return writeJSON(stdout, out)
	}
	msg := "maintenance " + onOff(on)
	if on {
		msg += ": active runs stop at their next item boundary; no run starts"
	}
	if len(p.ResumedRuns) > 0 {
		resumed := make([]string, len(p.ResumedRuns))
		for i, r := range p.ResumedRuns {
			resumed[i] = fmt.Sprintf("#%s %s", runNumber(r.ID), r.JobName)
		}
		msg += "; resumed " + strings.Join(resumed, ", ")
	}
	fmt.Fprintln(stdout, msg)
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
