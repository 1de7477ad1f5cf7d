package notify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/baton-run/baton/notify"
	bt "github.com/baton-run/baton/runner/batontype"
)

// counting is a receiver answering with h that counts the requests it got.
func counting(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func webhook(url string) bt.NotificationMessage {
	return bt.NotificationMessage{DeliveryID: 1, Kind: bt.NotifyTest, Secret: "k",
		Channel: bt.NotificationChannel{Kind: bt.ChannelWebhook, URL: url}}
}

// A receiver on a loopback address, by IP or by a name that resolves to one, is refused when
// the connection is dialled, unless the sender allows private networks.
func TestSendRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv, hits := counting(t, func(w http.ResponseWriter, r *http.Request) {})
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	for _, url := range []string{srv.URL + "/hook", "http://localhost" + port + "/hook"} {
		err := (&notify.Sender{}).Send(context.Background(), webhook(url))
		if err == nil || !strings.Contains(err.Error(), "not a public address") || !strings.Contains(err.Error(), "notify-allow-private-networks") {
			t.Errorf("%s: %v, want refused as not a public address, naming the flag", url, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback receiver got %d requests", n)
	}
	if err := (&notify.Sender{AllowPrivateNetworks: true}).Send(context.Background(), webhook(srv.URL+"/hook")); err != nil {
		t.Fatalf("with private networks allowed: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("with private networks allowed the receiver got %d requests, want 1", n)
	}
}

// A redirect is not followed, to any address: the 3xx is the answer, and a failure.
func TestSendFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	target, targetHits := counting(t, func(w http.ResponseWriter, r *http.Request) {})
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		first, _ := counting(t, func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, target.URL+"/internal", code) })
		err := (&notify.Sender{AllowPrivateNetworks: true}).Send(context.Background(), webhook(first.URL))
		if err == nil || !strings.Contains(err.Error(), http.StatusText(code)) || !strings.Contains(err.Error(), "not followed") {
			t.Errorf("redirect %d: %v, want a failure naming the status and that redirects are not followed", code, err)
		}
	}
	if n := targetHits.Load(); n != 0 {
		t.Fatalf("the redirect's target got %d requests", n)
	}
}

// An error answer is kept as its status line alone: neither the body nor the reason phrase
// the receiver sent.
func TestSendKeepsOnlyTheStatusLine(t *testing.T) {
	t.Parallel()
	srv, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("redis_version:7.2.4 internal banner"))
	})
	err := (&notify.Sender{AllowPrivateNetworks: true}).Send(context.Background(), webhook(srv.URL))
	if err == nil || err.Error() != "HTTP 500 Internal Server Error" {
		t.Fatalf("error %v, want exactly HTTP 500 Internal Server Error", err)
	}
}
