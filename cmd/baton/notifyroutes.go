package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// notifyRoutesCommand is `notify routes ...`.
func notifyRoutesCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("notify routes", notifyUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	channel := fs.String("channel", "", "the channel's name or id")
	var kinds, jobs, severity *string
	want := 0
	switch sub {
	case "list":
	case "add":
		kinds = fs.String("kinds", "", "comma-separated alarm kinds (default all)")
		jobs = fs.String("jobs", "", "comma-separated job globs (default all)")
		severity = fs.String("min-severity", "warning", "warning or critical")
	case "remove":
		want = 1
	default:
		return unknownSubcommand("notify routes", sub, notifyUsage, stderr)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return parseFailed(err, notifyUsage, stdout, stderr)
	}
	if len(positional) != want {
		fmt.Fprint(stderr, notifyUsage)
		return usageErrorf("notify routes %s: want %d argument(s), got %d", sub, want, len(positional))
	}
	in := map[string]any{}
	if sub == "add" {
		if *channel == "" {
			return usageErrorf("notify routes add: give --channel")
		}
		sev := strings.ToUpper(*severity)
		if sev != "WARNING" && sev != "CRITICAL" {
			return usageErrorf("notify routes add: --min-severity must be warning or critical, not %q", *severity)
		}
		in["kinds"], in["jobs"], in["minSeverity"] = splitList(strings.ToUpper(*kinds)), splitList(*jobs), sev
	}
	c, err := api.client("notify routes " + sub)
	if err != nil {
		return err
	}
	list, err := channels(ctx, c)
	if err != nil {
		return err
	}
	switch sub {
	case "add":
		ch := findChannel(list, *channel)
		if ch == nil {
			return &codedError{code: exitNotFound, err: fmt.Errorf("notify routes add: no channel %q", *channel)}
		}
		return saveChannel(ctx, c, map[string]any{"id": ch.ID, "routes": append(routeInputs(ch.Routes, ""), in)}, api.json(), stdout)
	case "remove":
		for _, ch := range list {
			for _, r := range ch.Routes {
				if r.ID == positional[0] {
					return saveChannel(ctx, c, map[string]any{"id": ch.ID, "routes": routeInputs(ch.Routes, r.ID)}, api.json(), stdout)
				}
			}
		}
		return &codedError{code: exitNotFound, err: fmt.Errorf("notify routes remove: no route %q", positional[0])}
	}
	if *channel != "" && findChannel(list, *channel) == nil {
		return &codedError{code: exitNotFound, err: fmt.Errorf("notify routes list: no channel %q", *channel)}
	}
	return listRoutes(list, *channel, api.json(), stdout)
}

// findChannel returns the channel of list named or numbered ref, or nil.
func findChannel(list []wireChannel, ref string) *wireChannel {
	for i := range list {
		if list[i].Name == ref || list[i].ID == ref {
			return &list[i]
		}
	}
	return nil
}

// routeInputs are routes as a save's input, but the route of id skip.
func routeInputs(routes []wireRoute, skip string) []any {
	out := []any{}
	for _, r := range routes {
		if r.ID != skip {
			out = append(out, map[string]any{"kinds": r.Kinds, "jobs": r.Jobs, "minSeverity": r.MinSeverity})
		}
	}
	return out
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	out := []string{}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// listRoutes prints the routes of the channels of list (of channel ref only, when not "").
func listRoutes(list []wireChannel, ref string, asJSON bool, stdout io.Writer) error {
	type row struct {
		wireRoute
		Channel string `json:"channel"`
	}
	rows := []row{}
	for _, ch := range list {
		if ref != "" && ch.Name != ref && ch.ID != ref {
			continue
		}
		for _, r := range ch.Routes {
			rows = append(rows, row{r, ch.Name})
		}
	}
	if asJSON {
		return writeJSON(stdout, map[string]any{"routes": rows})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROUTE\tCHANNEL\tKINDS\tJOBS\tMIN SEVERITY")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Channel, allOr(r.Kinds), allOr(r.Jobs), r.MinSeverity)
	}
	return tw.Flush()
}

func allOr(list []string) string {
	if len(list) == 0 {
		return "all"
	}
	return strings.Join(list, ",")
}

// notifyDeliveriesCommand is `notify deliveries`.
func notifyDeliveriesCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	_, fs, err := subcommandFlags("notify deliveries", notifyUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	channel := fs.String("channel", "", "the channel's name or id")
	status := fs.String("status", "", "pending, sent or failed")
	limit := fs.Int("limit", 20, "deliveries to show (1 to 100)")
	if positional, err := parseInterleaved(fs, args[1:]); err != nil {
		return parseFailed(err, notifyUsage, stdout, stderr)
	} else if len(positional) != 0 {
		return usageErrorf("notify deliveries: want no argument, got %d", len(positional))
	}
	vars := map[string]any{"first": *limit}
	if s := strings.ToUpper(*status); s != "" {
		if s != "PENDING" && s != "SENT" && s != "FAILED" {
			return usageErrorf("notify deliveries: --status must be pending, sent or failed, not %q", *status)
		}
		vars["s"] = s
	}
	c, err := api.client("notify deliveries")
	if err != nil {
		return err
	}
	if *channel != "" {
		if vars["c"], err = channelID(ctx, c, *channel); err != nil {
			return err
		}
	}
	var data struct {
		NotificationDeliveries []wireDelivery `json:"notificationDeliveries"`
	}
	if err := c.do(ctx, `query NotificationDeliveries($c: ID, $s: DeliveryStatus, $first: Int) { notificationDeliveries(channelId: $c, status: $s, first: $first) { `+
		deliveryFields+` } }`, vars, &data); err != nil {
		return err
	}
	if api.json() {
		if data.NotificationDeliveries == nil {
			data.NotificationDeliveries = []wireDelivery{}
		}
		return writeJSON(stdout, map[string]any{"deliveries": data.NotificationDeliveries})
	}
	names, err := channelNames(ctx, c)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tCHANNEL\tKIND\tALARM\tSTATUS\tATTEMPTS\tLAST ERROR")
	for _, d := range data.NotificationDeliveries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", d.CreatedAt, names.of(d.ChannelID), d.Kind, d.AlertKey, d.Status, d.Attempts, orDash(d.LastError))
	}
	return tw.Flush()
}

// channelNamer names channels by id.
type channelNamer map[string]string

// channelNames reads the channels' names.
func channelNames(ctx context.Context, c *apiClient) (channelNamer, error) {
	list, err := channels(ctx, c)
	if err != nil {
		return nil, err
	}
	names := channelNamer{}
	for _, ch := range list {
		names[ch.ID] = ch.Name
	}
	return names, nil
}

// of is the name of channel id, or "#id" for one since removed.
func (n channelNamer) of(id string) string {
	if name, ok := n[id]; ok {
		return name
	}
	return "#" + id
}
