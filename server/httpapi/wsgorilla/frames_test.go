package wsgorilla

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
)

// TestSubscribeID: after gqlgen has decoded a message, SubscribeID is the id of a
// graphql-transport-ws subscribe message, and nothing for any other message, for one too long
// to keep, or on the legacy subprotocol.
func TestSubscribeID(t *testing.T) {
	t.Parallel()
	long := `{"id":"9","type":"subscribe","payload":{"query":"` + strings.Repeat("x", maxKeptMessage) + `"}}`
	for _, tc := range []struct {
		name, proto, message, want string
	}{
		{"subscribe", protoTransportWS, `{"id":"7","type":"subscribe","payload":{"query":"subscription { manual }"}}`, "7"},
		{"id last", protoTransportWS, `{"type":"subscribe","payload":{"query":"subscription { manual }"},"id":"x\"y"}`, `x"y`},
		{"ping", protoTransportWS, `{"type":"ping"}`, ""},
		{"complete", protoTransportWS, `{"id":"7","type":"complete"}`, ""},
		{"too long", protoTransportWS, long, ""},
		{"legacy start", protoGraphQLWS, `{"id":"7","type":"start","payload":{"query":"subscription { manual }"}}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, client, _ := acceptPair(t, Implementation{}, gqlOptions, tc.proto)
			if err := client.WriteMessage(websocket.TextMessage, []byte(tc.message)); err != nil {
				t.Fatal(err)
			}
			_, r, err := sc.NextReader()
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any // as gqlgen reads it: a decoder, which need not read to EOF
			if err := json.NewDecoder(r).Decode(&m); err != nil {
				t.Fatal(err)
			}
			id, ok := sc.SubscribeID()
			if id != tc.want || ok != (tc.want != "") {
				t.Fatalf("SubscribeID() = %q, %v; want %q", id, ok, tc.want)
			}
		})
	}
}

// TestNextFrameIsTheTransportsMessage: the frame NextFrame builds for a payload and an id is,
// byte for byte, the message gqlgen's transport sends for them, HTML characters and quotes
// included, and WritePrepared delivers it whole.
func TestNextFrameIsTheTransportsMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{})
	c := dial(t, f.url, protoTransportWS)
	send(t, c, msg{Type: "connection_init"})
	expect(t, c, "connection_ack")
	const id = `a"<b>&é`
	subscribe(t, c, "subscribe", id, "subscription { manual }")
	wait(t, f.started, "subscription start")
	f.push(t, "<script>\"&'é\u2028")
	_ = c.SetReadDeadline(time.Now().Add(ioTimeout))
	_, sent, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Payload json.RawMessage }
	if err := json.Unmarshal(sent, &m); err != nil {
		t.Fatal(err)
	}
	built, err := nextMessage(m.Payload, id)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(built, sent) {
		t.Fatalf("built  %s\ngqlgen %s", built, sent)
	}

	sc, client, _ := acceptPair(t, Implementation{WriteTimeout: ioTimeout}, gqlOptions, protoTransportWS)
	frame, err := NextFrame(m.Payload, id)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // one frame, written twice
		if err := sc.WritePrepared(frame); err != nil {
			t.Fatal(err)
		}
		_ = client.SetReadDeadline(time.Now().Add(ioTimeout))
		if _, got, err := client.ReadMessage(); err != nil || !bytes.Equal(got, sent) {
			t.Fatalf("received %s, %v; want %s", got, err, sent)
		}
	}
}
