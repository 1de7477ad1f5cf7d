// Package notify delivers alarm notifications over HTTP: a signed JSON webhook, a
// Slack-compatible incoming webhook and a PagerDuty Events v2 endpoint. It implements
// runner.NotificationSender; the runner's outbox decides what to send, when, and how often to
// retry. Receivers of the webhook verify its signature with Verify
// (docs/operator-runbook.md, "Alarm notifications").
package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// The webhook's headers.
const (
	// HeaderTimestamp carries the Unix time of the request, in seconds; it is signed with the
	// body, and a receiver refuses one too far from its own clock (a replay).
	HeaderTimestamp = "X-Baton-Timestamp"
	// HeaderSignature carries "v1=" and the hex HMAC-SHA256, keyed with the channel's secret,
	// of the timestamp, a '.', and the body.
	HeaderSignature = "X-Baton-Signature"
	// HeaderDelivery carries the delivery's id: the same on every retry of a delivery, so a
	// receiver can drop a repeat.
	HeaderDelivery = "X-Baton-Delivery"
	// DefaultTolerance is how far a webhook's timestamp may be from the receiver's clock.
	DefaultTolerance = 5 * time.Minute
)

// Sender posts notifications over HTTP. Unless AllowPrivateNetworks is set it connects only
// to public addresses, judged on the address dialled (after the name is resolved); it uses no
// proxy from the environment and follows no redirect: a 3xx answer is a failure. An error
// answer is kept as its status line, never its body (docs/operator-runbook.md, "Threat
// model").
type Sender struct {
	// Client makes the requests in place of the sender's own, whose rules above it then
	// replaces; nil means the sender's own client, with a 10 s timeout.
	Client *http.Client
	// NowFunc stamps webhooks; nil means time.Now.
	NowFunc func() time.Time
	// ConsoleURL is the console's base as its users reach it (https://baton.example.com/admin;
	// `baton serve --public-url` sets it). When set, every message links the alarm's target,
	// run or job page and the alarms page (ConsoleLink).
	ConsoleURL string
	// AllowPrivateNetworks lets deliveries reach loopback, link-local and private addresses
	// (--notify-allow-private-networks).
	AllowPrivateNetworks bool

	once   sync.Once
	client *http.Client
}

// WebhookEvent is the body of a webhook: the event ("alert.trigger", "alert.resolve" or
// "test"), the delivery's id and the alarm.
type WebhookEvent struct {
	Event    string          `json:"event"`
	Delivery int64           `json:"delivery"`
	Alert    bt.AlertPayload `json:"alert"`
	Source   string          `json:"source"`
	// Console links the alarm's pages in the console; absent when the Sender has no ConsoleURL.
	Console *Link `json:"console,omitempty"`
}

// Send delivers m to its channel; any answer but a 2xx is an error (retried by the outbox).
func (s *Sender) Send(ctx context.Context, m bt.NotificationMessage) error {
	var (
		target string
		body   []byte
		header = http.Header{"Content-Type": {"application/json"}, "User-Agent": {"baton-notify/1"}}
		err    error
	)
	switch m.Channel.Kind {
	case bt.ChannelWebhook:
		target = m.Channel.URL
		body, err = json.Marshal(WebhookEvent{Event: webhookEvent(m.Kind), Delivery: m.DeliveryID, Alert: m.Alert, Source: m.Source,
			Console: ConsoleLink(s.ConsoleURL, m.Alert)})
		ts := strconv.FormatInt(s.now().Unix(), 10)
		header.Set(HeaderTimestamp, ts)
		header.Set(HeaderSignature, Sign(m.Secret, ts, body))
		header.Set(HeaderDelivery, strconv.FormatInt(m.DeliveryID, 10))
	case bt.ChannelSlack:
		target = m.Secret
		body, err = json.Marshal(SlackMessage(m, s.ConsoleURL))
	case bt.ChannelPagerDuty:
		target = m.Channel.URL
		body, err = json.Marshal(PagerDutyEvent(m, s.ConsoleURL))
	default:
		return fmt.Errorf("unknown channel kind %q", m.Channel.Kind)
	}
	if err != nil {
		return err
	}
	return s.post(ctx, target, header, body)
}

func (s *Sender) post(ctx context.Context, target string, header http.Header, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return errors.New("the channel's URL does not make a request") // the URL may be the secret
	}
	req.Header = header
	client := s.Client
	if client == nil {
		s.once.Do(func() { s.client = newClient(s.AllowPrivateNetworks) })
		client = s.client
	}
	resp, err := client.Do(req)
	if err != nil {
		var uerr interface{ Unwrap() error }
		if errors.As(err, &uerr) { // *url.Error names the URL, which may be the secret
			err = uerr.Unwrap()
		}
		return fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // read, never kept: the connection is reused
	// The status line alone, in Go's words: neither the body nor the receiver's reason phrase,
	// which could carry what an internal service says about itself.
	status := fmt.Sprintf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode/100 == 3:
		return fmt.Errorf("%s: redirects are not followed", strings.TrimSpace(status))
	case resp.StatusCode/100 != 2:
		return errors.New(strings.TrimSpace(status))
	}
	return nil
}

func (s *Sender) now() time.Time {
	if s.NowFunc != nil {
		return s.NowFunc()
	}
	return time.Now()
}

func webhookEvent(k bt.NotificationKind) string {
	switch k {
	case bt.NotifyTrigger:
		return "alert.trigger"
	case bt.NotifyResolve:
		return "alert.resolve"
	}
	return "test"
}

// Sign returns the signature header's value for body sent at timestamp ts (Unix seconds as
// sent in HeaderTimestamp), keyed with secret: "v1=" and the hex HMAC-SHA256 of ts "." body.
func Sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Errors of Verify.
var (
	ErrBadSignature = errors.New("the signature does not match the body")
	ErrStale        = errors.New("the timestamp is too far from now: a replay, or a clock off")
)

// Verify checks a webhook as its receiver got it: the signature (the HeaderSignature value,
// which may list several "v1=" values separated by commas, as during a key rotation) must be
// body's under secret and ts (the HeaderTimestamp value), and ts within tolerance of now.
func Verify(secret, ts, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrStale
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	want := Sign(secret, ts, body)
	for _, got := range strings.Split(signature, ",") {
		if hmac.Equal([]byte(strings.TrimSpace(got)), []byte(want)) {
			return nil
		}
	}
	return ErrBadSignature
}
