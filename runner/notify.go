package runner

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/runner/internal/outbox"
	"github.com/baton-run/baton/runner/store"
)

// The defaults of NotifyConfig.
const (
	DefaultNotifyInterval    = 5 * time.Second
	DefaultNotifyTimeout     = 10 * time.Second
	DefaultNotifyRetryBase   = 2 * time.Second
	DefaultNotifyRetryMax    = 10 * time.Minute
	DefaultNotifyMaxAttempts = 12
)

// NotifyConfig configures the delivery of alarm notifications to channels
// (docs/adr/0021-alert-notifications.md).
type NotifyConfig struct {
	// Sender delivers notifications (package notify does it over HTTP). nil leaves the outbox
	// to the other instances: this one queues deliveries but sends none.
	Sender NotificationSender
	// SecretKey encrypts the channels' literal secrets at rest (AES-256-GCM: 32 bytes; 16 or
	// 24 take AES-128 or -192). Every instance needs the same key. Without one, a literal
	// secret is refused (SECRET_KEY_MISSING) and only "env:BATON_NOTIFY_NAME" references are taken.
	SecretKey []byte
	// LookupEnvFunc reads the environment variable an "env:NAME" secret names; nil means
	// os.LookupEnv.
	LookupEnvFunc func(name string) (string, bool)
	// Interval between polls of the outbox, and between judgements of the alarms while any
	// route exists; 0 means DefaultNotifyInterval.
	Interval time.Duration
	// Timeout bounds one delivery; 0 means DefaultNotifyTimeout.
	Timeout time.Duration
	// RetryBase is the delay before a failed delivery's first retry, doubled for each next one
	// up to RetryMax, with jitter; 0 means DefaultNotifyRetryBase and DefaultNotifyRetryMax.
	RetryBase, RetryMax time.Duration
	// MaxAttempts bounds a delivery's attempts; after the last it is FAILED with its error
	// recorded. 0 means DefaultNotifyMaxAttempts.
	MaxAttempts int
}

func (c NotifyConfig) withDefaults() NotifyConfig {
	if c.Interval <= 0 {
		c.Interval = DefaultNotifyInterval
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultNotifyTimeout
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultNotifyRetryBase
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultNotifyRetryMax
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultNotifyMaxAttempts
	}
	if c.LookupEnvFunc == nil {
		c.LookupEnvFunc = os.LookupEnv
	}
	return c
}

// NotificationSender delivers one notification to its channel. An error is retried later.
type NotificationSender interface {
	Send(ctx context.Context, m bt.NotificationMessage) error
}

// notifier is the runner's part of notifications: the secret box and the outbox worker.
type notifier struct {
	cfg    NotifyConfig
	box    *secretBox
	worker *outbox.Worker // nil without a Sender
}

func newNotifier(r *Runner) (*notifier, error) {
	cfg := r.cfg.Notify.withDefaults()
	box, err := newSecretBox(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	n := &notifier{cfg: cfg, box: box}
	if cfg.Sender == nil {
		return n, nil
	}
	n.worker = outbox.New(outbox.Config{Store: r.store, Logger: r.log,
		SendFunc: func(ctx context.Context, d store.ClaimedDelivery) error { return n.send(ctx, r.cfg.Instance, d) },
		JudgeFunc: func(ctx context.Context) error {
			_, err := r.Alarms().Active(ctx)
			return err
		},
		ResultFunc: func(k bt.ChannelKind, result string) {
			r.metrics.NotificationsSent.WithLabelValues(string(k), result).Inc()
		},
		PendingFunc: func(p int) { r.metrics.NotificationsPending.Set(float64(p)) },
		Interval:    cfg.Interval, Timeout: cfg.Timeout, RetryBase: cfg.RetryBase, RetryMax: cfg.RetryMax, MaxAttempts: cfg.MaxAttempts,
	})
	return n, nil
}

// send opens d's channel secret and hands d to the sender.
func (n *notifier) send(ctx context.Context, instance string, d store.ClaimedDelivery) error {
	secret, err := n.box.open(d.Channel.Secret, n.cfg.LookupEnvFunc)
	if err != nil {
		return fmt.Errorf("channel %s: %w", d.Channel.Name, err)
	}
	ch := d.Channel.NotificationChannel
	if ch.URL, err = n.box.openURL(ch.URL); err != nil {
		return fmt.Errorf("channel %s: %w", d.Channel.Name, err)
	}
	return n.cfg.Sender.Send(ctx, bt.NotificationMessage{DeliveryID: d.ID, Kind: d.Kind, Attempt: d.Attempts, Alert: d.Alert,
		Channel: ch, Secret: secret, Source: "baton " + instance})
}

// sealChannelURLs seals every credential URL still stored in the clear (saved before URLs
// were sealed), when this instance has the secret key; each is audited, as scheme://host/…,
// and keeps its channel's last editor. A failure is logged and left to the next start.
func sealChannelURLs(ctx context.Context, r *Runner) {
	box := r.notify.box
	if box == nil {
		return
	}
	rows, err := r.store.NotificationChannels(ctx)
	if err != nil {
		r.log.Warn("seal channel URLs: list channels", "err", err)
		return
	}
	for _, c := range rows {
		if strings.HasPrefix(c.URL, sealedPrefix) || !credentialURL(c.URL) {
			continue
		}
		args := map[string]any{"id": c.ID, "url": shownURL(c.URL)}
		_, err := r.store.UpdateChannel(ctx, c.ID, c.UpdatedBy, func(sc *store.StoredChannel) error {
			if strings.HasPrefix(sc.URL, sealedPrefix) || !credentialURL(sc.URL) {
				return nil // sealed meanwhile, by another instance or a save
			}
			sealed, err := box.storeURL(sc.URL)
			sc.URL = sealed
			return err
		}, nil)
		if err == bt.ErrNotFound {
			continue
		}
		r.audit(ctx, "system", "sealNotificationChannelURL", fmt.Sprintf("channel:%d", c.ID), args, err)
		if err != nil {
			r.log.Warn("seal channel URL", "channel", c.Name, "err", err)
		}
	}
}

// serve works the outbox until ctx is done, when this instance has a sender.
func (n *notifier) serve(ctx context.Context) {
	if n.worker != nil {
		n.worker.Serve(ctx)
	}
}

// NotificationService manages the channels alarms are delivered to and the routes that
// choose them, and reads the deliveries. Get it with AlarmService.Notifications.
type NotificationService struct{ r *Runner }

// Notifications returns the notification service: where the alarms are delivered.
func (s *AlarmService) Notifications() *NotificationService { return &NotificationService{s.r} }

// Channels returns every channel, by name, without its secret.
func (s *NotificationService) Channels(ctx context.Context) ([]bt.NotificationChannel, error) {
	rows, err := s.r.store.NotificationChannels(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]bt.NotificationChannel, len(rows))
	for i, c := range rows {
		out[i] = s.public(c)
	}
	return out, nil
}

// Channel returns channel id. NOT_FOUND: no such channel.
func (s *NotificationService) Channel(ctx context.Context, id int64) (*bt.NotificationChannel, error) {
	list, err := s.Channels(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].ID == id {
			return &list[i], nil
		}
	}
	return nil, bt.Errorf(bt.CodeNotFound, "no notification channel %d", id)
}

// public is c as the API shows it: whether its secret is set and a hint, never the secret;
// its URL opened, and as anyone may see it (URLShown). A sealed URL that does not open is
// shown as "(sealed)".
func (s *NotificationService) public(c store.StoredChannel) bt.NotificationChannel {
	out := c.NotificationChannel
	if u, err := s.r.notify.box.openURL(c.URL); err == nil {
		out.URL, out.URLShown, out.URLSecret = u, shownURL(u), credentialURL(u)
	} else {
		out.URL, out.URLShown, out.URLSecret = "", "(sealed)", true
	}
	out.SecretSet = c.Secret != ""
	literal, _ := s.r.notify.box.open(c.Secret, func(string) (string, bool) { return "", false })
	out.SecretHint = secretHint(c.Secret, literal)
	return out
}

// CreateChannel adds a channel. INVALID_INPUT (with Field): a value out of bounds, an unknown
// kind, a URL not http or https; SECRET_KEY_MISSING: a literal secret without a secret key;
// CONFLICT: the name is taken. A refused channel is not stored. Audited, without the secret.
func (s *NotificationService) CreateChannel(ctx context.Context, actor string, in bt.ChannelInput) (*bt.NotificationChannel, error) {
	r := s.r
	args := channelArgs(in)
	target := "channel:" + deref(in.Name)
	c := store.StoredChannel{NotificationChannel: bt.NotificationChannel{Kind: in.Kind, RatePerMinute: bt.DefaultChannelRate, Burst: bt.DefaultChannelBurst}}
	err := s.applyChannel(&c, in, true)
	var routes []bt.NotificationRoute
	if err == nil && in.Routes != nil {
		routes, err = checkRoutes(*in.Routes)
	}
	var saved store.StoredChannel
	if err == nil {
		saved, err = r.store.CreateChannel(ctx, c, routes, actorOr(actor))
	}
	r.audit(ctx, actor, "createNotificationChannel", target, args, err)
	if err != nil {
		return nil, err
	}
	out := s.public(saved)
	return &out, nil
}

// UpdateChannel changes channel id: a nil field of in stays as it is, and so does the secret
// when in gives none. Errors as CreateChannel's, and NOT_FOUND. Audited, without the secret.
func (s *NotificationService) UpdateChannel(ctx context.Context, actor string, id int64, in bt.ChannelInput) (*bt.NotificationChannel, error) {
	r := s.r
	args := channelArgs(in)
	args["id"] = id
	var routes *[]bt.NotificationRoute
	var err error
	if in.Routes != nil {
		var list []bt.NotificationRoute
		list, err = checkRoutes(*in.Routes)
		routes = &list
	}
	var saved store.StoredChannel
	if err == nil {
		saved, err = r.store.UpdateChannel(ctx, id, actorOr(actor), func(c *store.StoredChannel) error { return s.applyChannel(c, in, false) }, routes)
	}
	if err == bt.ErrNotFound {
		err = bt.Errorf(bt.CodeNotFound, "no notification channel %d", id)
	}
	r.audit(ctx, actor, "updateNotificationChannel", fmt.Sprintf("channel:%d", id), args, err)
	if err != nil {
		return nil, err
	}
	out := s.public(saved)
	return &out, nil
}

// DeleteChannel removes channel id with its routes and deliveries. NOT_FOUND: no such channel.
func (s *NotificationService) DeleteChannel(ctx context.Context, actor string, id int64) error {
	err := s.r.store.DeleteChannel(ctx, id)
	if err == bt.ErrNotFound {
		err = bt.Errorf(bt.CodeNotFound, "no notification channel %d", id)
	}
	s.r.audit(ctx, actor, "deleteNotificationChannel", fmt.Sprintf("channel:%d", id), map[string]any{"id": id}, err)
	return err
}

func invalidChannel(field, format string, a ...any) error {
	return &bt.Error{Code: bt.CodeInvalidInput, Field: field, Message: fmt.Sprintf(format, a...)}
}

// envName is what an "env:NAME" secret may name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// applyChannel judges in and applies it to c, sealing a new literal secret.
func (s *NotificationService) applyChannel(c *store.StoredChannel, in bt.ChannelInput, create bool) error {
	if create && !c.Kind.Valid() {
		return invalidChannel("kind", "a channel's kind is WEBHOOK, SLACK or PAGERDUTY, not %q", c.Kind)
	}
	if !create && in.Kind != "" && in.Kind != c.Kind {
		return invalidChannel("kind", "a channel keeps its kind (%s): add another channel for %s", c.Kind, in.Kind)
	}
	if in.Name != nil {
		if err := bt.CheckName("channel", *in.Name); err != nil {
			return err
		}
		c.Name = *in.Name
	}
	if strings.HasPrefix(c.URL, sealedPrefix) {
		u, err := s.r.notify.box.openURL(c.URL)
		if err != nil && in.URL == nil {
			return invalidChannel("url", "%v: give the URL again", err)
		}
		c.URL = u
	}
	if in.URL != nil {
		c.URL = strings.TrimSpace(*in.URL)
	}
	if c.Kind == bt.ChannelPagerDuty && c.URL == "" {
		c.URL = bt.DefaultPagerDutyURL
	}
	if err := checkChannelURL(c.Kind, c.URL); err != nil {
		return err
	}
	if v := in.RatePerMinute; v != nil && (*v < 1 || *v > bt.MaxChannelRate) {
		return invalidChannel("ratePerMinute", "a channel's rate is 1 to %d deliveries a minute, not %d", bt.MaxChannelRate, *v)
	} else if v != nil {
		c.RatePerMinute = *v
	}
	if v := in.Burst; v != nil && (*v < 1 || *v > bt.MaxChannelBurst) {
		return invalidChannel("burst", "a channel's burst is 1 to %d deliveries, not %d", bt.MaxChannelBurst, *v)
	} else if v != nil {
		c.Burst = *v
	}
	if in.Secret != nil && *in.Secret != "" {
		if err := checkSecret(c.Kind, *in.Secret); err != nil {
			return err
		}
		sealed, err := s.r.notify.box.store(*in.Secret)
		if err != nil {
			return err
		}
		c.Secret = sealed
	}
	if c.Secret == "" {
		return invalidChannel("secret", "a %s channel needs its secret (%s), or env:%sNAME to read it from the environment", c.Kind, secretName(c.Kind), NotifyEnvPrefix)
	}
	if s.r.notify.box == nil && in.URL == nil && !create {
		return nil // without a key, a URL stored before stays as it is when it is not changed
	}
	sealed, err := s.r.notify.box.storeURL(c.URL)
	if err != nil {
		return err
	}
	c.URL = sealed
	return nil
}

func secretName(k bt.ChannelKind) string {
	switch k {
	case bt.ChannelSlack:
		return "the incoming webhook's URL"
	case bt.ChannelPagerDuty:
		return "the integration's routing key"
	}
	return "the HMAC signing key"
}

// checkChannelURL refuses a URL a channel of kind k cannot post to.
func checkChannelURL(k bt.ChannelKind, raw string) error {
	if k == bt.ChannelSlack {
		if raw != "" {
			return invalidChannel("url", "a SLACK channel's URL is its secret (it carries the token): give it as secret, not url")
		}
		return nil
	}
	if raw == "" {
		return invalidChannel("url", "a %s channel needs the URL to post to", k)
	}
	return checkHTTPURL("url", raw)
}

func checkHTTPURL(field, raw string) error {
	if len(raw) > bt.MaxChannelURLLen {
		return invalidChannel(field, "a URL is at most %d characters", bt.MaxChannelURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalidChannel(field, "a channel posts to an http or https URL with a host, not %q", bt.Truncate(raw, 80))
	}
	return nil
}

// checkSecret refuses a secret out of bounds, a bad environment reference, or a Slack URL
// that is no URL.
func checkSecret(k bt.ChannelKind, secret string) error {
	if len(secret) > bt.MaxChannelSecretLen {
		return invalidChannel("secret", "a secret is at most %d characters", bt.MaxChannelSecretLen)
	}
	if name, ok := strings.CutPrefix(secret, envPrefix); ok {
		if !envName.MatchString(name) {
			return invalidChannel("secret", "env: names an environment variable (letters, digits, '_'), not %q", bt.Truncate(name, 40))
		}
		return checkEnvName(name)
	}
	if k == bt.ChannelSlack {
		if err := checkHTTPURL("secret", secret); err != nil {
			return invalidChannel("secret", "a SLACK channel's secret is its incoming webhook's http or https URL")
		}
	}
	return nil
}

// channelArgs is a channel change as the audit log records it: whether a secret was given and
// of which form, never the secret.
func channelArgs(in bt.ChannelInput) map[string]any {
	args := map[string]any{}
	if in.Name != nil {
		args["name"] = *in.Name
	}
	if in.Kind != "" {
		args["kind"] = string(in.Kind)
	}
	if in.URL != nil {
		args["url"] = bt.Truncate(shownURL(strings.TrimSpace(*in.URL)), 200) // never a credential URL whole
	}
	if in.Secret != nil && *in.Secret != "" {
		args["secret"] = "(literal, stored encrypted)"
		if strings.HasPrefix(*in.Secret, envPrefix) && envName.MatchString(strings.TrimPrefix(*in.Secret, envPrefix)) {
			args["secret"] = *in.Secret
		}
	}
	if in.RatePerMinute != nil {
		args["ratePerMinute"] = *in.RatePerMinute
	}
	if in.Burst != nil {
		args["burst"] = *in.Burst
	}
	if in.Routes != nil {
		var routes []map[string]any
		for _, rt := range *in.Routes {
			routes = append(routes, map[string]any{"kinds": rt.Kinds, "jobs": rt.Jobs, "minSeverity": string(rt.MinSeverity)})
		}
		args["routes"] = routes
	}
	return args
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Routes returns the routes, of channel channelID when it is not 0, by id.
func (s *NotificationService) Routes(ctx context.Context, channelID int64) ([]bt.NotificationRoute, error) {
	return s.r.store.NotificationRoutes(ctx, channelID)
}

// CreateRoute sends the alarms rt matches to its channel. INVALID_INPUT (with Field): an
// unknown alarm kind or severity, a job glob that is empty, too long or malformed, too many
// globs; NOT_FOUND: no such channel. Audited.
func (s *NotificationService) CreateRoute(ctx context.Context, actor string, rt bt.NotificationRoute) (*bt.NotificationRoute, error) {
	r := s.r
	args := map[string]any{"channelId": rt.ChannelID, "kinds": rt.Kinds, "jobs": rt.Jobs, "minSeverity": string(rt.MinSeverity)}
	if rt.MinSeverity == "" {
		rt.MinSeverity = bt.SeverityWarning
	}
	rt.CreatedBy = actorOr(actor)
	err := checkRoute(rt)
	var saved bt.NotificationRoute
	if err == nil {
		saved, err = r.store.CreateRoute(ctx, rt)
		if err == bt.ErrNotFound {
			err = &bt.Error{Code: bt.CodeNotFound, Field: "channelId", Message: fmt.Sprintf("no notification channel %d", rt.ChannelID)}
		}
	}
	r.audit(ctx, actor, "createNotificationRoute", fmt.Sprintf("channel:%d", rt.ChannelID), args, err)
	if err != nil {
		return nil, err
	}
	return &saved, nil
}

// checkRoutes judges a channel's routes, giving each its default severity.
func checkRoutes(routes []bt.NotificationRoute) ([]bt.NotificationRoute, error) {
	if len(routes) > bt.MaxChannelRoutes {
		return nil, invalidChannel("routes", "a channel has at most %d routes", bt.MaxChannelRoutes)
	}
	out := make([]bt.NotificationRoute, len(routes))
	for i, rt := range routes {
		if rt.MinSeverity == "" {
			rt.MinSeverity = bt.SeverityWarning
		}
		if err := checkRoute(rt); err != nil {
			return nil, err
		}
		out[i] = rt
	}
	return out, nil
}

// checkRoute refuses a route that names what no alarm can be.
func checkRoute(rt bt.NotificationRoute) error {
	for _, k := range rt.Kinds {
		if !slices.Contains(bt.KnownAlertKinds, k) {
			return invalidChannel("kinds", "no alarm kind %q (known: %v)", bt.Truncate(string(k), 60), bt.KnownAlertKinds)
		}
	}
	if rt.MinSeverity != bt.SeverityWarning && rt.MinSeverity != bt.SeverityCritical {
		return invalidChannel("minSeverity", "a route's minimum severity is WARNING or CRITICAL, not %q", bt.Truncate(string(rt.MinSeverity), 40))
	}
	if len(rt.Jobs) > bt.MaxRouteJobs {
		return invalidChannel("jobs", "a route names at most %d job globs", bt.MaxRouteJobs)
	}
	for _, g := range rt.Jobs {
		if _, err := path.Match(g, ""); g == "" || len(g) > bt.MaxRouteJobPatternLn || err != nil {
			return invalidChannel("jobs", "a job glob is 1 to %d characters (* any run, ? one character), not %q", bt.MaxRouteJobPatternLn, bt.Truncate(g, 60))
		}
	}
	return nil
}

// DeleteRoute removes route id. NOT_FOUND: no such route. Audited.
func (s *NotificationService) DeleteRoute(ctx context.Context, actor string, id int64) error {
	err := s.r.store.DeleteRoute(ctx, id)
	if err == bt.ErrNotFound {
		err = bt.Errorf(bt.CodeNotFound, "no notification route %d", id)
	}
	s.r.audit(ctx, actor, "deleteNotificationRoute", fmt.Sprintf("route:%d", id), map[string]any{"id": id}, err)
	return err
}

// SendTest queues a test notification to channel id, delivered like any other (with its
// retries). NOT_FOUND: no such channel. Audited.
func (s *NotificationService) SendTest(ctx context.Context, actor string, id int64) (*bt.Delivery, error) {
	r := s.r
	now, err := r.store.Now(ctx)
	var d bt.Delivery
	if err == nil {
		d, err = r.store.QueueTest(ctx, id, bt.AlertPayload{Key: fmt.Sprintf("TEST:channel:%d", id), Kind: "TEST", Severity: string(bt.SeverityWarning),
			Message: fmt.Sprintf("Test notification sent by %s: this channel is wired.", actorOr(actor)), Since: now, FiredAt: now})
	}
	if err == bt.ErrNotFound {
		err = bt.Errorf(bt.CodeNotFound, "no notification channel %d", id)
	}
	r.audit(ctx, actor, "sendTestNotification", fmt.Sprintf("channel:%d", id), map[string]any{"id": id}, err)
	if err != nil {
		return nil, err
	}
	if w := r.notify.worker; w != nil {
		w.Wake()
	}
	return &d, nil
}

// Deliveries lists the outbox's deliveries, newest first.
func (s *NotificationService) Deliveries(ctx context.Context, f bt.DeliveryFilter) ([]bt.Delivery, error) {
	if f.Limit <= 0 {
		f.Limit = 20
	}
	return s.r.store.Deliveries(ctx, f)
}
