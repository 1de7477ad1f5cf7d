package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

const notifyUsage = `usage:
  baton notify channels list
        every channel alarms are delivered to, with its routes (secrets are never shown)
  baton notify channels add NAME --kind webhook|slack|pagerduty [--endpoint URL]
                        (--secret S | --secret-file PATH) [--rate N] [--burst B]
        add a channel; the secret is the webhook's HMAC key, the Slack incoming webhook's
        URL or the PagerDuty routing key, or env:BATON_NOTIFY_NAME to read it from each
        instance's environment (only names starting BATON_NOTIFY_). --secret-file keeps it
        off the command line. An --endpoint with userinfo, a query or a path is stored
        encrypted too, and shown whole to admins only
  baton notify channels set CHANNEL [--name N] [--endpoint URL] [--secret S | --secret-file PATH]
                        [--rate N] [--burst B]
        change a channel (a flag not given stays as it is)
  baton notify channels remove CHANNEL
        remove a channel with its routes and deliveries
  baton notify channels test CHANNEL
        queue a test notification to it
  baton notify routes list [--channel CHANNEL]
        the routes, of one channel or all
  baton notify routes add --channel CHANNEL [--kinds K1,K2] [--jobs GLOB1,GLOB2]
                        [--min-severity warning|critical]
        send the alarms of those kinds (default all), of jobs matching a glob (default
        all), of that severity or above, to the channel
  baton notify routes remove ROUTE
  baton notify deliveries [--channel CHANNEL] [--status pending|sent|failed] [--limit N]
        the outbox's deliveries, newest first

CHANNEL is a channel's name or id; ROUTE a route's id (as routes list shows).
` + apiFlagsText

// notifyCommand manages alarm notifications through the API.
func notifyCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, notifyUsage)
		return usageErrorf("notify: no subcommand given (channels, routes or deliveries)")
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, notifyUsage)
		return flag.ErrHelp
	}
	switch args[0] {
	case "channels":
		return notifyChannelsCommand(ctx, args[1:], stdout, stderr)
	case "routes":
		return notifyRoutesCommand(ctx, args[1:], stdout, stderr)
	case "deliveries":
		return notifyDeliveriesCommand(ctx, append([]string{"list"}, args[1:]...), stdout, stderr)
	}
	return unknownSubcommand("notify", args[0], notifyUsage, stderr)
}

// wireChannel is a channel as the API sends it and as --output json prints it.
type wireChannel struct {
	ID            string      `json:"id"`
	Name          string      `json:"name"`
	Kind          string      `json:"kind"`
	URL           *string     `json:"url"`
	SecretSet     bool        `json:"secretSet"`
	SecretHint    *string     `json:"secretHint"`
	RatePerMinute int         `json:"ratePerMinute"`
	Burst         int         `json:"burst"`
	UpdatedBy     string      `json:"updatedBy"`
	Routes        []wireRoute `json:"routes"`
}

// wireRoute is a route as the API sends it.
type wireRoute struct {
	ID          string   `json:"id"`
	ChannelID   string   `json:"channelId"`
	Kinds       []string `json:"kinds"`
	Jobs        []string `json:"jobs"`
	MinSeverity string   `json:"minSeverity"`
}

// wireDelivery is a delivery as the API sends it.
type wireDelivery struct {
	ID        string  `json:"id"`
	ChannelID string  `json:"channelId"`
	Kind      string  `json:"kind"`
	AlertKey  string  `json:"alertKey"`
	Status    string  `json:"status"`
	Attempts  int     `json:"attempts"`
	LastError *string `json:"lastError"`
	CreatedAt string  `json:"createdAt"`
	SentAt    *string `json:"sentAt"`
}

const (
	routeFields    = `id channelId kinds jobs minSeverity`
	channelFields  = `id name kind url secretSet secretHint ratePerMinute burst updatedBy routes { ` + routeFields + ` }`
	deliveryFields = `id channelId kind alertKey status attempts lastError createdAt sentAt`
)

// channelFlags are the flags of `channels add` and `channels set`.
type channelFlags struct {
	kind, url, secret, secretFile, name *string
	rate, burst                         *int
}

func defineChannelFlags(fs *flag.FlagSet, add bool) *channelFlags {
	f := &channelFlags{
		url:        fs.String("endpoint", "", "the URL to post to (webhook, PagerDuty)"),
		secret:     fs.String("secret", "", "the secret, or env:BATON_NOTIFY_NAME"),
		secretFile: fs.String("secret-file", "", "read the secret from this file"),
		rate:       fs.Int("rate", 0, "deliveries a minute (1 to 6000)"),
		burst:      fs.Int("burst", 0, "deliveries at once (1 to 1000)"),
	}
	if add {
		f.kind = fs.String("kind", "", "webhook, slack or pagerduty")
	} else {
		f.name = fs.String("name", "", "a new name")
	}
	return f
}

// input is the channel input of the flags given.
func (f *channelFlags) input(fs *flag.FlagSet) (map[string]any, error) {
	in := map[string]any{}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "endpoint":
			in["url"] = *f.url
		case "secret":
			in["secret"] = *f.secret
		case "rate":
			in["ratePerMinute"] = *f.rate
		case "burst":
			in["burst"] = *f.burst
		case "name":
			in["name"] = *f.name
		}
	})
	if *f.secretFile != "" {
		if _, ok := in["secret"]; ok {
			return nil, usageErrorf("notify channels: give --secret or --secret-file, not both")
		}
		b, err := os.ReadFile(*f.secretFile)
		if err != nil {
			return nil, usageError(fmt.Errorf("notify channels: --secret-file: %w", err))
		}
		in["secret"] = strings.TrimSpace(string(b))
	}
	if f.kind != nil {
		k := strings.ToUpper(*f.kind)
		if k != "WEBHOOK" && k != "SLACK" && k != "PAGERDUTY" {
			return nil, usageErrorf("notify channels add: --kind must be webhook, slack or pagerduty, not %q", *f.kind)
		}
		in["kind"] = k
		if _, ok := in["secret"]; !ok {
			return nil, usageErrorf("notify channels add: give --secret or --secret-file")
		}
	}
	return in, nil
}

// notifyChannelsCommand is `notify channels ...`.
func notifyChannelsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, fs, err := subcommandFlags("notify channels", notifyUsage, args, stdout, stderr)
	if err != nil {
		return err
	}
	api := defineAPIFlags(fs)
	want := 1
	var cf *channelFlags
	switch sub {
	case "list":
		want = 0
	case "add", "set":
		cf = defineChannelFlags(fs, sub == "add")
	case "remove", "test":
	default:
		return unknownSubcommand("notify channels", sub, notifyUsage, stderr)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		return parseFailed(err, notifyUsage, stdout, stderr)
	}
	if len(positional) != want {
		fmt.Fprint(stderr, notifyUsage)
		return usageErrorf("notify channels %s: want %d argument(s), got %d", sub, want, len(positional))
	}
	var in map[string]any
	if cf != nil {
		if in, err = cf.input(fs); err != nil {
			return err
		}
		if sub == "set" && len(in) == 0 {
			return usageErrorf("notify channels set: nothing to change")
		}
	}
	c, err := api.client("notify channels " + sub)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		return listChannels(ctx, c, api.json(), stdout)
	case "add":
		in["name"] = positional[0]
		return saveChannel(ctx, c, in, api.json(), stdout)
	}
	id, err := channelID(ctx, c, positional[0])
	if err != nil {
		return err
	}
	switch sub {
	case "set":
		in["id"] = id
		return saveChannel(ctx, c, in, api.json(), stdout)
	case "remove":
		return simpleMutation(ctx, c, "deleteNotificationChannel", "DeleteNotificationChannelInput", map[string]any{"id": id}, "deletedId",
			"removed channel "+positional[0], stdout)
	}
	return simpleMutation(ctx, c, "sendTestNotification", "SendTestNotificationInput", map[string]any{"channelId": id}, "delivery { id }",
		"queued a test notification to "+positional[0], stdout)
}

func channels(ctx context.Context, c *apiClient) ([]wireChannel, error) {
	var data struct {
		NotificationChannels []wireChannel `json:"notificationChannels"`
	}
	if err := c.do(ctx, `query NotificationChannels { notificationChannels { `+channelFields+` } }`, nil, &data); err != nil {
		return nil, err
	}
	if data.NotificationChannels == nil {
		data.NotificationChannels = []wireChannel{}
	}
	return data.NotificationChannels, nil
}

// channelID returns the id of the channel named or numbered ref.
func channelID(ctx context.Context, c *apiClient, ref string) (string, error) {
	list, err := channels(ctx, c)
	if err != nil {
		return "", err
	}
	for _, ch := range list {
		if ch.Name == ref || ch.ID == ref {
			return ch.ID, nil
		}
	}
	return "", &codedError{code: exitNotFound, err: fmt.Errorf("notify: no channel %q", ref)}
}

func listChannels(ctx context.Context, c *apiClient, asJSON bool, stdout io.Writer) error {
	list, err := channels(ctx, c)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, map[string]any{"channels": list})
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tKIND\tURL\tSECRET\tRATE\tROUTES\tID")
	for _, ch := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/min burst %d\t%d\t%s\n", ch.Name, ch.Kind, orDash(ch.URL), orDash(ch.SecretHint),
			ch.RatePerMinute, ch.Burst, len(ch.Routes), ch.ID)
	}
	return tw.Flush()
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

// saveChannel adds or changes a channel (and its routes, when in names them).
func saveChannel(ctx context.Context, c *apiClient, in map[string]any, asJSON bool, stdout io.Writer) error {
	var data struct {
		SaveNotificationChannel struct {
			Channel    *wireChannel `json:"channel"`
			UserErrors []userErr    `json:"userErrors"`
		} `json:"saveNotificationChannel"`
	}
	q := `mutation SaveNotificationChannel($in: SaveNotificationChannelInput!) { saveNotificationChannel(input: $in) { channel { ` + channelFields + ` } userErrors { code message field } } }`
	if err := c.do(ctx, q, map[string]any{"in": in}, &data); err != nil {
		return err
	}
	p := data.SaveNotificationChannel
	if err := userErrs(p.UserErrors); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if p.Channel == nil {
		return &codedError{code: exitAPI, err: fmt.Errorf("notify: the server returned no channel")}
	}
	if asJSON {
		return writeJSON(stdout, p.Channel)
	}
	ch := p.Channel
	fmt.Fprintf(stdout, "%s: %s %s, secret %s, %d/min burst %d, %d route(s) (id %s)\n", ch.Name, ch.Kind, orDash(ch.URL), orDash(ch.SecretHint),
		ch.RatePerMinute, ch.Burst, len(ch.Routes), ch.ID)
	return nil
}

// simpleMutation runs a mutation whose answer is a selection and userErrors, printing done.
func simpleMutation(ctx context.Context, c *apiClient, field, inputType string, in map[string]any, selection, done string, stdout io.Writer) error {
	var data map[string]struct {
		UserErrors []userErr `json:"userErrors"`
	}
	q := fmt.Sprintf(`mutation %s($in: %s!) { %s(input: $in) { %s userErrors { code message field } } }`, operationName(field), inputType, field, selection)
	if err := c.do(ctx, q, map[string]any{"in": in}, &data); err != nil {
		return err
	}
	if err := userErrs(data[field].UserErrors); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	fmt.Fprintln(stdout, done)
	return nil
}
