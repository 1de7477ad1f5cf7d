package wsgorilla

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

const (
	// ioTimeout bounds every wait in these tests. Nothing should come near it.
	ioTimeout = 5 * time.Second

	protoTransportWS = "graphql-transport-ws"
	protoGraphQLWS   = "graphql-ws"
)

var _ transport.WebsocketImplementation = New(websocket.Upgrader{})

// ---------------------------------------------------------------------------
// A gqlgen server without codegen: a hand-built ExecutableSchema that has two
// subscriptions.
//
//	manual      sends whatever the test pushes into fixture.feed, and ends when
//	            the test signals fixture.finish. It reports its start and the
//	            cancellation of its context.
//	burst(n)    sends n numbered events as fast as it can, then completes.
// ---------------------------------------------------------------------------

const testSchema = `
	type Query { ok: Boolean! }
	type Subscription {
		manual: String!
		burst(n: Int!): Int!
	}
`

type fixture struct {
	url string

	feed      chan string   // value for the next "manual" event
	finish    chan struct{} // ends one "manual" subscription
	started   chan struct{} // one per "manual" subscription started
	cancelled chan struct{} // one per "manual" subscription context cancelled
	served    chan struct{} // one per ServeHTTP call that returned
	errs      chan error    // ErrorFunc calls
	closes    chan int      // CloseFunc calls
}

// newFixture serves a gqlgen handler whose websocket transport is ws, with
// Implementation set to impl. ErrorFunc and CloseFunc are set to record into
// the fixture. Other fields of ws are kept.
func newFixture(t *testing.T, impl transport.WebsocketImplementation, ws transport.Websocket) *fixture {
	t.Helper()
	f := &fixture{
		feed:      make(chan string),
		finish:    make(chan struct{}),
		started:   make(chan struct{}, 64),
		cancelled: make(chan struct{}, 64),
		served:    make(chan struct{}, 64),
		errs:      make(chan error, 256),
		closes:    make(chan int, 64),
	}

	ws.Implementation = impl
	ws.ErrorFunc = func(_ context.Context, err error) {
		select {
		case f.errs <- err:
		default:
		}
	}
	ws.CloseFunc = func(_ context.Context, code int) {
		select {
		case f.closes <- code:
		default:
		}
	}

	h := handler.New(f.schema())
	h.AddTransport(ws)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		select {
		case f.served <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	f.url = wsURL(srv.URL)
	return f
}

func (f *fixture) schema() graphql.ExecutableSchema {
	schema := gqlparser.MustLoadSchema(&ast.Source{Input: testSchema})
	return &graphql.ExecutableSchemaMock{
		SchemaFunc: func() *ast.Schema { return schema },
		ComplexityFunc: func(context.Context, string, string, int, map[string]any) (int, bool) {
			return 1, true
		},
		ExecFunc: func(ctx context.Context) graphql.ResponseHandler {
			opCtx := graphql.GetOperationContext(ctx)
			if opCtx.Operation.Operation != ast.Subscription {
				return graphql.OneShot(graphql.ErrorResponse(ctx, "only subscriptions are served"))
			}
			field, ok := opCtx.Operation.SelectionSet[0].(*ast.Field)
			if !ok {
				return graphql.OneShot(graphql.ErrorResponse(ctx, "unexpected selection"))
			}
			switch field.Name {
			case "manual":
				return f.manual(ctx)
			case "burst":
				n, _ := field.ArgumentMap(opCtx.Variables)["n"].(int64)
				return burst(int(n))
			default:
				return graphql.OneShot(graphql.ErrorResponse(ctx, "unknown field %s", field.Name))
			}
		},
	}
}

func (f *fixture) manual(ctx context.Context) graphql.ResponseHandler {
	f.started <- struct{}{}
	go func() {
		<-ctx.Done()
		f.cancelled <- struct{}{}
	}()
	return func(ctx context.Context) *graphql.Response {
		select {
		case <-ctx.Done():
			return nil
		case <-f.finish:
			return nil
		case v := <-f.feed:
			data, err := json.Marshal(map[string]string{"manual": v})
			if err != nil {
				panic(err)
			}
			return &graphql.Response{Data: data}
		}
	}
}

func burst(n int) graphql.ResponseHandler {
	i := 0
	return func(context.Context) *graphql.Response {
		if i >= n {
			return nil
		}
		data := fmt.Appendf(nil, `{"burst":%d}`, i)
		i++
		return &graphql.Response{Data: data}
	}
}

// push hands v to the active "manual" subscription.
func (f *fixture) push(t *testing.T, v string) {
	t.Helper()
	select {
	case f.feed <- v:
	case <-time.After(ioTimeout):
		t.Fatalf("no manual subscription took %q", v)
	}
}

// end makes the active "manual" subscription complete.
func (f *fixture) end(t *testing.T) {
	t.Helper()
	select {
	case f.finish <- struct{}{}:
	case <-time.After(ioTimeout):
		t.Fatal("no manual subscription to finish")
	}
}

// readErrors returns the ErrorFunc calls recorded so far.
func (f *fixture) readErrors() []error {
	var errs []error
	for {
		select {
		case err := <-f.errs:
			errs = append(errs, err)
		default:
			return errs
		}
	}
}

// ---------------------------------------------------------------------------
// Client helpers (gorilla client).
// ---------------------------------------------------------------------------

type msg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func wsURL(httpURL string) string {
	return "ws" + strings.TrimPrefix(httpURL, "http")
}

func dial(t *testing.T, url string, protocols ...string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: protocols, HandshakeTimeout: ioTimeout}
	c, resp, err := d.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	_ = resp.Body.Close()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c *websocket.Conn, m msg) {
	t.Helper()
	if err := c.SetWriteDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}
	if err := c.WriteJSON(m); err != nil {
		t.Fatalf("send %s: %v", m.Type, err)
	}
}

func subscribe(t *testing.T, c *websocket.Conn, typ, id, query string) {
	t.Helper()
	payload, err := json.Marshal(map[string]string{"query": query})
	if err != nil {
		t.Fatal(err)
	}
	send(t, c, msg{Type: typ, ID: id, Payload: payload})
}

// read returns the next message, skipping any whose type is in skip. It
// gives up after ioTimeout in total, even if skipped messages keep arriving.
func read(t *testing.T, c *websocket.Conn, skip ...string) msg {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}
	for {
		var m msg
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("read: %v", err)
		}
		if !slices.Contains(skip, m.Type) {
			return m
		}
	}
}

func expect(t *testing.T, c *websocket.Conn, typ string, skip ...string) msg {
	t.Helper()
	m := read(t, c, skip...)
	if m.Type != typ {
		t.Fatalf("got message %q (id %q, payload %s), want %q", m.Type, m.ID, m.Payload, typ)
	}
	return m
}

// readClose reads until the connection ends. It returns the close error and
// the types of the messages it skipped on the way. It gives up after ioTimeout
// in total, even if messages keep arriving.
func readClose(t *testing.T, c *websocket.Conn) (*websocket.CloseError, []string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("connection ended with %v, want a close error", err)
			}
			return ce, seen
		}
		var m msg
		_ = json.Unmarshal(data, &m)
		seen = append(seen, m.Type)
	}
}

// closeNormally sends a 1000 close frame and waits for the server's reply.
func closeNormally(t *testing.T, c *websocket.Conn) {
	t.Helper()
	err := c.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(ioTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if ce, _ := readClose(t, c); ce.Code != websocket.CloseNormalClosure {
		t.Fatalf("server replied with close code %d, want 1000", ce.Code)
	}
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(ioTimeout):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func nextValue(t *testing.T, m msg) string {
	t.Helper()
	var resp struct {
		Data struct {
			Manual string `json:"manual"`
		} `json:"data"`
		Errors json.RawMessage `json:"errors"`
	}
	if err := json.Unmarshal(m.Payload, &resp); err != nil {
		t.Fatalf("payload %s: %v", m.Payload, err)
	}
	if len(resp.Errors) > 0 {
		t.Fatalf("payload has errors: %s", m.Payload)
	}
	return resp.Data.Manual
}

func readErrorsOnly(errs []error) []error {
	var out []error
	for _, err := range errs {
		var we transport.WebsocketError
		if errors.As(err, &we) && we.IsReadError {
			out = append(out, err)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// End-to-end through gqlgen's transport.Websocket.
// ---------------------------------------------------------------------------

func TestGraphQLTransportWS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{})
	c := dial(t, f.url, protoTransportWS)
	if got := c.Subprotocol(); got != protoTransportWS {
		t.Fatalf("negotiated %q, want %q", got, protoTransportWS)
	}

	send(t, c, msg{Type: "connection_init"})
	expect(t, c, "connection_ack")

	send(t, c, msg{Type: "ping", Payload: json.RawMessage(`{"n":1}`)})
	if pong := expect(t, c, "pong"); string(pong.Payload) != `{"n":1}` {
		t.Fatalf("pong payload %s, want the ping's", pong.Payload)
	}

	subscribe(t, c, "subscribe", "1", "subscription { manual }")
	wait(t, f.started, "subscription start")
	for _, v := range []string{"a", "b"} {
		f.push(t, v)
		m := expect(t, c, "next")
		if m.ID != "1" || nextValue(t, m) != v {
			t.Fatalf("got next id %q payload %s, want id 1 value %q", m.ID, m.Payload, v)
		}
	}
	f.end(t)
	if m := expect(t, c, "complete"); m.ID != "1" {
		t.Fatalf("complete for id %q, want 1", m.ID)
	}

	// The client stops a second subscription with "complete".
	subscribe(t, c, "subscribe", "2", "subscription { manual }")
	wait(t, f.started, "second subscription start")
	wait(t, f.cancelled, "first subscription context end") // it ends on complete
	send(t, c, msg{Type: "complete", ID: "2"})
	wait(t, f.cancelled, "second subscription cancellation")

	closeNormally(t, c)
	wait(t, f.served, "handler return")
	if code := wait(t, f.closes, "CloseFunc"); code != websocket.CloseNormalClosure {
		t.Fatalf("CloseFunc code %d, want 1000", code)
	}
	// A normal close reads as ErrWebsocketClosed, which gqlgen does not report.
	if errs := readErrorsOnly(f.readErrors()); len(errs) > 0 {
		t.Fatalf("ErrorFunc got read errors on a normal close: %v", errs)
	}
}

func TestGraphQLWSLegacy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		protocols []string
		want      string
	}{
		{"negotiated", []string{protoGraphQLWS}, protoGraphQLWS},
		// gqlgen falls back to graphql-ws when no subprotocol is negotiated.
		{"no subprotocol", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{
				KeepAlivePingInterval: 10 * time.Millisecond,
			})
			c := dial(t, f.url, tc.protocols...)
			if got := c.Subprotocol(); got != tc.want {
				t.Fatalf("negotiated %q, want %q", got, tc.want)
			}

			send(t, c, msg{Type: "connection_init"})
			expect(t, c, "connection_ack")
			expect(t, c, "ka")

			subscribe(t, c, "start", "1", "subscription { manual }")
			wait(t, f.started, "subscription start")
			f.push(t, "x")
			m := expect(t, c, "data", "ka")
			if m.ID != "1" || nextValue(t, m) != "x" {
				t.Fatalf("got data id %q payload %s, want id 1 value x", m.ID, m.Payload)
			}
			f.end(t)
			if m := expect(t, c, "complete", "ka"); m.ID != "1" {
				t.Fatalf("complete for id %q, want 1", m.ID)
			}

			// Keep-alives keep coming on the interval.
			expect(t, c, "ka")
			expect(t, c, "ka")

			send(t, c, msg{Type: "connection_terminate"})
			ce, _ := readClose(t, c)
			if ce.Code != websocket.CloseNormalClosure || ce.Text != "terminated" {
				t.Fatalf("close %d %q, want 1000 terminated", ce.Code, ce.Text)
			}
			wait(t, f.served, "handler return")
		})
	}
}

func TestSubprotocolNegotiation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		server []string // Upgrader.Subprotocols
		client []string
		want   string
	}{
		{"transport-ws only", nil, []string{protoTransportWS}, protoTransportWS},
		{"graphql-ws only", nil, []string{protoGraphQLWS}, protoGraphQLWS},
		{"both, gqlgen order", nil, []string{protoTransportWS, protoGraphQLWS}, protoGraphQLWS},
		{"upgrader preference wins", []string{protoTransportWS}, []string{protoGraphQLWS, protoTransportWS}, protoTransportWS},
		{"upgrader extras keep gqlgen ones", []string{"other"}, []string{protoTransportWS}, protoTransportWS},
		{"unknown only", nil, []string{"unknown"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, New(websocket.Upgrader{Subprotocols: tc.server}), transport.Websocket{})
			c := dial(t, f.url, tc.client...)
			if got := c.Subprotocol(); got != tc.want {
				t.Fatalf("negotiated %q, want %q", got, tc.want)
			}
			send(t, c, msg{Type: "connection_init"})
			expect(t, c, "connection_ack")
			// Check which dialect gqlgen chose for the connection.
			if tc.want == protoTransportWS {
				send(t, c, msg{Type: "ping"})
				expect(t, c, "pong")
			} else {
				expect(t, c, "ka")
			}
		})
	}

	t.Run("non-graphql subprotocol is closed with 1002", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, New(websocket.Upgrader{Subprotocols: []string{"custom"}}), transport.Websocket{})
		c := dial(t, f.url, "custom")
		if got := c.Subprotocol(); got != "custom" {
			t.Fatalf("negotiated %q, want custom", got)
		}
		ce, _ := readClose(t, c)
		if ce.Code != websocket.CloseProtocolError || !strings.Contains(ce.Text, "custom") {
			t.Fatalf("close %d %q, want 1002 naming the subprotocol", ce.Code, ce.Text)
		}
	})
}

func TestMergeSubprotocols(t *testing.T) {
	t.Parallel()
	own := make([]string, 1, 8)
	own[0] = protoTransportWS
	got := mergeSubprotocols(own, []string{protoGraphQLWS, protoTransportWS})
	if want := []string{protoTransportWS, protoGraphQLWS}; !slices.Equal(got, want) {
		t.Fatalf("merged %q, want %q", got, want)
	}
	// The caller's spare capacity must not be written to.
	if spare := own[:cap(own)]; spare[1] != "" {
		t.Fatalf("caller's slice was written to: %q", spare)
	}
	if got := mergeSubprotocols(nil, []string{"a", "b"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("merged %q, want [a b]", got)
	}
}

func TestAcceptChecksOrigin(t *testing.T) {
	t.Parallel()
	dialFrom := func(url string) (*http.Response, error) {
		d := websocket.Dialer{Subprotocols: []string{protoTransportWS}, HandshakeTimeout: ioTimeout}
		c, resp, err := d.Dial(url, http.Header{"Origin": {"https://elsewhere.example"}})
		if c != nil {
			_ = c.Close()
		}
		return resp, err
	}

	t.Run("zero upgrader rejects cross-origin", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{})
		resp, err := dialFrom(f.url)
		if !errors.Is(err, websocket.ErrBadHandshake) {
			t.Fatalf("dial error %v, want a bad handshake", err)
		}
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("status %d, want 403 from gorilla", resp.StatusCode)
		}
	})
	t.Run("CheckOrigin is honoured", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, New(websocket.Upgrader{
			CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "https://elsewhere.example" },
		}), transport.Websocket{})
		resp, err := dialFrom(f.url)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if resp.StatusCode != http.StatusSwitchingProtocols {
			t.Fatalf("status %d, want 101", resp.StatusCode)
		}
	})
}

func TestInitFuncCloseCode(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{protoTransportWS, protoGraphQLWS} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{
				InitFunc: func(ctx context.Context, _ transport.InitPayload) (context.Context, *transport.InitPayload, error) {
					ctx = transport.AppendCloseReason(ctx, "forbidden")
					ctx = transport.WithWebsocketCloseCode(ctx, 4403)
					return ctx, nil, errors.New("denied")
				},
			})
			c := dial(t, f.url, proto)
			send(t, c, msg{Type: "connection_init", Payload: json.RawMessage(`{"token":"bad"}`)})

			ce, seen := readClose(t, c)
			if ce.Code != 4403 || ce.Text != "forbidden" {
				t.Fatalf("close %d %q, want 4403 forbidden", ce.Code, ce.Text)
			}
			if slices.Contains(seen, "connection_ack") {
				t.Fatalf("rejected connection was acked: %q", seen)
			}
			if proto == protoGraphQLWS && !slices.Contains(seen, "connection_error") {
				t.Fatalf("graphql-ws client got %q before the close, want a connection_error", seen)
			}
			if code := wait(t, f.closes, "CloseFunc"); code != 4403 {
				t.Fatalf("CloseFunc code %d, want 4403", code)
			}
			wait(t, f.served, "handler return")
		})
	}
}

func TestPayloadReadLimit(t *testing.T) {
	t.Parallel()
	limit := int64(1024)
	f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{PayloadReadLimit: &limit})
	c := dial(t, f.url, protoTransportWS)
	send(t, c, msg{Type: "connection_init"})
	expect(t, c, "connection_ack")

	// A message under the limit is fine.
	pad, _ := json.Marshal(map[string]string{"pad": strings.Repeat("x", 900)})
	send(t, c, msg{Type: "ping", Payload: pad})
	expect(t, c, "pong")

	// A message over the limit closes the connection with 1009.
	big, _ := json.Marshal(msg{Type: "ping", Payload: json.RawMessage(
		fmt.Sprintf(`{"pad":%q}`, strings.Repeat("x", 4*int(limit))))})
	// The server may reset the connection before the client has written the
	// whole message, so a write error here is expected and not checked.
	_ = c.WriteMessage(websocket.TextMessage, big)
	ce, _ := readClose(t, c)
	if ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("close %d %q, want 1009", ce.Code, ce.Text)
	}
	wait(t, f.served, "handler return")
	var sawLimit bool
	for _, err := range f.readErrors() {
		sawLimit = sawLimit || errors.Is(err, websocket.ErrReadLimit)
	}
	if !sawLimit {
		t.Fatal("ErrorFunc did not get websocket.ErrReadLimit")
	}
}

func TestClientDisconnectCancelsSubscription(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		disconnect func(t *testing.T, c *websocket.Conn)
		normal     bool
	}{
		{"normal close", closeNormally, true},
		{"close with no status", func(t *testing.T, c *websocket.Conn) {
			if err := c.WriteControl(websocket.CloseMessage, []byte{}, time.Now().Add(ioTimeout)); err != nil {
				t.Fatal(err)
			}
			_, _ = readClose(t, c)
		}, true},
		{"going away", func(t *testing.T, c *websocket.Conn) {
			err := c.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), time.Now().Add(ioTimeout))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = readClose(t, c)
		}, false},
		{"dropped connection", func(t *testing.T, c *websocket.Conn) {
			if err := c.NetConn().Close(); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{})
			c := dial(t, f.url, protoTransportWS)
			send(t, c, msg{Type: "connection_init"})
			expect(t, c, "connection_ack")
			subscribe(t, c, "subscribe", "1", "subscription { manual }")
			wait(t, f.started, "subscription start")

			tc.disconnect(t, c)

			wait(t, f.cancelled, "subscription cancellation")
			wait(t, f.served, "handler return")
			wait(t, f.closes, "CloseFunc")

			readErrs := readErrorsOnly(f.readErrors())
			if tc.normal {
				if len(readErrs) > 0 {
					t.Fatalf("ErrorFunc got read errors on a normal close: %v", readErrs)
				}
				return
			}
			if len(readErrs) == 0 {
				t.Fatal("ErrorFunc got no read error for an abnormal close")
			}
			for _, err := range readErrs {
				if errors.Is(err, transport.ErrWebsocketClosed) {
					t.Fatalf("abnormal close reported as ErrWebsocketClosed: %v", err)
				}
			}
		})
	}
}

func TestPingPong(t *testing.T) {
	t.Parallel()

	t.Run("answered pings keep the connection", func(t *testing.T) {
		t.Parallel()
		// The read deadline is 2*interval. The interval is generous so that a
		// loaded machine still gets its pong in on time.
		const interval = 250 * time.Millisecond
		f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{PingPongInterval: interval})
		c := dial(t, f.url, protoTransportWS)
		send(t, c, msg{Type: "connection_init"})
		expect(t, c, "connection_ack")

		// From here on a client goroutine answers every ping at once, and the
		// test goroutine also writes. So the client's writes take a lock.
		var writeMu sync.Mutex
		write := func(m msg) error {
			writeMu.Lock()
			defer writeMu.Unlock()
			if err := c.SetWriteDeadline(time.Now().Add(ioTimeout)); err != nil {
				return err
			}
			return c.WriteJSON(m)
		}
		if err := c.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		pings := make(chan struct{}, 64)
		others := make(chan msg, 64)
		readErr := make(chan error, 1)
		go func() {
			for {
				var m msg
				if err := c.ReadJSON(&m); err != nil {
					readErr <- err
					return
				}
				if m.Type != "ping" {
					others <- m
					continue
				}
				if err := write(msg{Type: "pong"}); err != nil {
					readErr <- err
					return
				}
				pings <- struct{}{}
			}
		}()
		await := func(what string) msg {
			t.Helper()
			select {
			case <-pings:
				return msg{Type: "ping"}
			case m := <-others:
				return m
			case err := <-readErr:
				t.Fatalf("connection ended while waiting for %s: %v", what, err)
			case <-time.After(ioTimeout):
				t.Fatalf("timed out waiting for %s", what)
			}
			panic("unreachable")
		}

		// Four answered pings span two read-deadline windows.
		for range 4 {
			if m := await("ping"); m.Type != "ping" {
				t.Fatalf("got %q %s, want ping", m.Type, m.Payload)
			}
		}

		// The connection still carries subscriptions.
		payload, _ := json.Marshal(map[string]string{"query": "subscription { manual }"})
		if err := write(msg{Type: "subscribe", ID: "1", Payload: payload}); err != nil {
			t.Fatal(err)
		}
		wait(t, f.started, "subscription start")
		f.push(t, "alive")
		for {
			m := await("next")
			if m.Type == "ping" {
				continue
			}
			if m.Type != "next" || nextValue(t, m) != "alive" {
				t.Fatalf("got %q %s, want next alive", m.Type, m.Payload)
			}
			break
		}
		if errs := f.readErrors(); len(errs) > 0 {
			t.Fatalf("ErrorFunc got %v", errs)
		}
	})

	t.Run("a missing pong drops the connection with 1006", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{PingPongInterval: 250 * time.Millisecond})
		c := dial(t, f.url, protoTransportWS)
		send(t, c, msg{Type: "connection_init"})
		expect(t, c, "connection_ack")

		// Never answer. The server's read deadline expires and it drops the
		// socket without a close frame.
		ce, seen := readClose(t, c)
		if ce.Code != websocket.CloseAbnormalClosure {
			t.Fatalf("close %d %q, want 1006 (no close frame)", ce.Code, ce.Text)
		}
		if !slices.Contains(seen, "ping") {
			t.Fatalf("client saw %q before the drop, want a ping", seen)
		}
		wait(t, f.served, "handler return")
		wait(t, f.closes, "CloseFunc")
		var sawTimeout bool
		for _, err := range readErrorsOnly(f.readErrors()) {
			sawTimeout = sawTimeout || isTimeout(err)
		}
		if !sawTimeout {
			t.Fatal("ErrorFunc did not get the read timeout")
		}
	})
}

func TestManySubscriptionsOneSocket(t *testing.T) {
	t.Parallel()
	const subs, events = 16, 200
	f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{
		PongOnlyInterval: time.Millisecond, // one more writer goroutine
	})
	c := dial(t, f.url, protoTransportWS)
	send(t, c, msg{Type: "connection_init"})
	expect(t, c, "connection_ack")

	for i := range subs {
		subscribe(t, c, "subscribe", fmt.Sprint(i), fmt.Sprintf("subscription { burst(n: %d) }", events))
	}

	next := map[string]int{}
	completed := 0
	for completed < subs {
		m := read(t, c, "pong")
		switch m.Type {
		case "next":
			var resp struct {
				Data struct {
					Burst int `json:"burst"`
				} `json:"data"`
			}
			if err := json.Unmarshal(m.Payload, &resp); err != nil {
				t.Fatalf("payload %s: %v", m.Payload, err)
			}
			if resp.Data.Burst != next[m.ID] {
				t.Fatalf("subscription %s: got event %d, want %d", m.ID, resp.Data.Burst, next[m.ID])
			}
			next[m.ID]++
		case "complete":
			if next[m.ID] != events {
				t.Fatalf("subscription %s completed after %d events, want %d", m.ID, next[m.ID], events)
			}
			completed++
		default:
			t.Fatalf("unexpected message %q: %s", m.Type, m.Payload)
		}
	}
}

// ---------------------------------------------------------------------------
// The connection wrapper on its own.
// ---------------------------------------------------------------------------

// acceptPair upgrades one connection with impl. It returns the server side as
// gqlgen would see it, the gorilla client side, and the handshake response.
// The handler stays running until the test ends, since the connection is
// closed when the handler returns.
func acceptPair(
	t *testing.T,
	impl Implementation,
	opts transport.WebsocketAcceptOptions,
	protocols ...string,
) (*conn, *websocket.Conn, *http.Response) {
	t.Helper()
	type result struct {
		c   transport.WebsocketConn
		err error
	}
	accepted := make(chan result, 1)
	testDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := impl.Accept(w, r, opts)
		accepted <- result{c, err}
		<-testDone
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(testDone) })

	d := websocket.Dialer{Subprotocols: protocols, HandshakeTimeout: ioTimeout}
	client, resp, err := d.Dial(wsURL(srv.URL), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })

	res := wait(t, accepted, "Accept")
	if res.err != nil {
		t.Fatalf("Accept: %v", res.err)
	}
	sc, ok := res.c.(*conn)
	if !ok {
		t.Fatalf("Accept returned %T, want *conn", res.c)
	}
	t.Cleanup(func() { _ = sc.Close() })
	return sc, client, resp
}

var gqlOptions = transport.WebsocketAcceptOptions{
	ResponseHeader: http.Header{},
	Subprotocols:   []string{protoGraphQLWS, protoTransportWS},
}

func TestAcceptResponseHeader(t *testing.T) {
	t.Parallel()
	opts := transport.WebsocketAcceptOptions{
		ResponseHeader: http.Header{"X-Wsgorilla-Test": {"yes"}},
		Subprotocols:   gqlOptions.Subprotocols,
	}
	sc, _, resp := acceptPair(t, Implementation{}, opts, protoTransportWS)
	if got := resp.Header.Get("X-Wsgorilla-Test"); got != "yes" {
		t.Fatalf("response header %q, want yes", got)
	}
	if got := sc.Subprotocol(); got != protoTransportWS {
		t.Fatalf("server side subprotocol %q, want %q", got, protoTransportWS)
	}
}

func TestConnNextReader(t *testing.T) {
	t.Parallel()

	t.Run("data message", func(t *testing.T) {
		t.Parallel()
		sc, client, _ := acceptPair(t, Implementation{}, gqlOptions)
		if err := client.WriteMessage(websocket.TextMessage, []byte(`{"type":"x"}`)); err != nil {
			t.Fatal(err)
		}
		typ, r, err := sc.NextReader()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if typ != websocket.TextMessage || string(body) != `{"type":"x"}` {
			t.Fatalf("got type %d body %q", typ, body)
		}
	})

	closeWith := func(payload []byte) func(*testing.T, *websocket.Conn) {
		return func(t *testing.T, c *websocket.Conn) {
			if err := c.WriteControl(websocket.CloseMessage, payload, time.Now().Add(ioTimeout)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name     string
		act      func(*testing.T, *websocket.Conn)
		closed   bool // want transport.ErrWebsocketClosed
		wantCode int  // otherwise want a gorilla close error with this code
	}{
		{"1000 normal", closeWith(websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye")), true, 0},
		{"1005 no status", closeWith([]byte{}), true, 0},
		{"1001 going away", closeWith(websocket.FormatCloseMessage(websocket.CloseGoingAway, "")), false, websocket.CloseGoingAway},
		{"4000 application", closeWith(websocket.FormatCloseMessage(4000, "app")), false, 4000},
		{"dropped", func(t *testing.T, c *websocket.Conn) { _ = c.NetConn().Close() }, false, websocket.CloseAbnormalClosure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc, client, _ := acceptPair(t, Implementation{}, gqlOptions)
			tc.act(t, client)
			_, r, err := sc.NextReader()
			if r != nil {
				t.Fatalf("got a reader with error %v", err)
			}
			if tc.closed {
				if err != transport.ErrWebsocketClosed {
					t.Fatalf("NextReader error %v, want transport.ErrWebsocketClosed", err)
				}
				return
			}
			if errors.Is(err, transport.ErrWebsocketClosed) {
				t.Fatalf("NextReader error %v must not be ErrWebsocketClosed", err)
			}
			if !websocket.IsCloseError(err, tc.wantCode) {
				t.Fatalf("NextReader error %v, want close code %d", err, tc.wantCode)
			}
		})
	}
}

func TestConnReadDeadline(t *testing.T) {
	t.Parallel()
	sc, client, _ := acceptPair(t, Implementation{}, gqlOptions)

	// gqlgen sets the deadline from another goroutine while a read is
	// blocked. The blocked read must still time out.
	readErr := make(chan error, 1)
	go func() {
		_, _, err := sc.NextReader()
		readErr <- err
	}()
	if err := sc.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, readErr, "read timeout"); !isTimeout(err) {
		t.Fatalf("NextReader error %v, want a timeout", err)
	}

	// The connection was dropped, with no close frame: the peer sees 1006.
	ce, _ := readClose(t, client)
	if ce.Code != websocket.CloseAbnormalClosure {
		t.Fatalf("client saw close %d, want 1006", ce.Code)
	}
	if err := sc.WriteJSON("late"); err == nil {
		t.Fatal("write after the deadline drop succeeded")
	}
	// Close stays safe to call after the drop.
	if err := sc.Close(); err != nil {
		t.Fatalf("Close after drop: %v", err)
	}
}

func TestConnConcurrentWrites(t *testing.T) {
	t.Parallel()
	const writers, perWriter = 8, 250

	type event struct {
		W int `json:"w"`
		I int `json:"i"`
	}

	t.Run("all messages arrive intact", func(t *testing.T) {
		t.Parallel()
		sc, client, _ := acceptPair(t, Implementation{WriteTimeout: ioTimeout}, gqlOptions)

		// A reader blocked the whole time, and deadline updates from another
		// goroutine, as gqlgen's ping loop does.
		go func() { _, _, _ = sc.NextReader() }()
		var wg sync.WaitGroup
		wg.Go(func() {
			for range perWriter {
				_ = sc.SetReadDeadline(time.Now().Add(ioTimeout))
			}
		})
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					if err := sc.WriteJSON(event{W: w, I: i}); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			})
		}
		go func() {
			wg.Wait()
			_ = sc.WriteClose(websocket.CloseNormalClosure, "done")
		}()

		next := make([]int, writers)
		for range writers * perWriter {
			if err := client.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
				t.Fatal(err)
			}
			var e event
			if err := client.ReadJSON(&e); err != nil {
				t.Fatalf("read: %v", err)
			}
			if e.W < 0 || e.W >= writers || e.I != next[e.W] {
				t.Fatalf("got %+v, want writer %d event %d", e, e.W, next[e.W])
			}
			next[e.W]++
		}
		ce, seen := readClose(t, client)
		if ce.Code != websocket.CloseNormalClosure || ce.Text != "done" || len(seen) > 0 {
			t.Fatalf("close %d %q after extra %q, want 1000 done", ce.Code, ce.Text, seen)
		}
	})

	t.Run("WriteClose during writes", func(t *testing.T) {
		t.Parallel()
		sc, client, _ := acceptPair(t, Implementation{}, gqlOptions)

		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				// Write until the close frame makes writes fail.
				for i := 0; ; i++ {
					if err := sc.WriteJSON(event{W: w, I: i}); err != nil {
						return
					}
				}
			})
		}
		// Let the writers get going before closing.
		for range writers {
			if err := client.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := client.ReadMessage(); err != nil {
				t.Fatal(err)
			}
		}
		if err := sc.WriteClose(4001, "stop"); err != nil {
			t.Fatalf("WriteClose: %v", err)
		}
		writersDone := make(chan struct{})
		go func() { wg.Wait(); close(writersDone) }()
		ce, _ := readClose(t, client)
		if ce.Code != 4001 || ce.Text != "stop" {
			t.Fatalf("close %d %q, want 4001 stop", ce.Code, ce.Text)
		}
		wait(t, writersDone, "writers to stop after the close frame")
		if err := sc.WriteClose(websocket.CloseNormalClosure, ""); !errors.Is(err, websocket.ErrCloseSent) {
			t.Fatalf("second WriteClose: %v, want ErrCloseSent", err)
		}
	})
}

func TestWriteCloseLongReason(t *testing.T) {
	t.Parallel()
	sc, client, _ := acceptPair(t, Implementation{}, gqlOptions)
	reason := strings.Repeat("é", 100) // 200 bytes; a close frame holds 123
	if err := sc.WriteClose(4403, reason); err != nil {
		t.Fatalf("WriteClose: %v", err)
	}
	ce, _ := readClose(t, client)
	if ce.Code != 4403 {
		t.Fatalf("close code %d, want 4403", ce.Code)
	}
	if len(ce.Text) > maxCloseReason || len(ce.Text) < maxCloseReason-1 ||
		!utf8.ValidString(ce.Text) || !strings.HasPrefix(reason, ce.Text) {
		t.Fatalf("close reason %q (%d bytes), want a valid 122-123 byte prefix", ce.Text, len(ce.Text))
	}
}

func TestTruncateCloseReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"terminated", "terminated"},
		{strings.Repeat("a", 200), strings.Repeat("a", maxCloseReason)},
		{strings.Repeat("a", 122) + "é", strings.Repeat("a", 122)}, // é would end at byte 124
		{"bad\xffutf8", "badutf8"},
	} {
		if got := truncateCloseReason(tc.in); got != tc.want {
			t.Errorf("truncateCloseReason(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestConnReadLimit(t *testing.T) {
	t.Parallel()
	sc, client, _ := acceptPair(t, Implementation{}, gqlOptions)
	sc.SetReadLimit(16)
	if err := client.WriteMessage(websocket.TextMessage, []byte(strings.Repeat("x", 64))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sc.NextReader(); !errors.Is(err, websocket.ErrReadLimit) {
		t.Fatalf("NextReader error %v, want ErrReadLimit", err)
	}
	ce, _ := readClose(t, client)
	if ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("client saw close %d, want 1009", ce.Code)
	}
}

func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	sc, _, _ := acceptPair(t, Implementation{WriteTimeout: 50 * time.Millisecond}, gqlOptions)

	// The client never reads, so the socket buffers fill and a write blocks.
	payload := strings.Repeat("x", 1<<20)
	writeErr := make(chan error, 1)
	go func() {
		for range 512 {
			if err := sc.WriteJSON(payload); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- errors.New("512 MiB written to a client that never reads")
	}()
	select {
	case err := <-writeErr:
		if !isTimeout(err) {
			t.Fatalf("write error %v, want a timeout", err)
		}
	case <-time.After(ioTimeout):
		_ = sc.Close() // unblock the writer
		t.Fatal("a blocked write did not time out")
	}
}

func TestWriteJSONEncodeError(t *testing.T) {
	t.Parallel()
	sc, client, _ := acceptPair(t, Implementation{}, gqlOptions)
	if err := sc.WriteJSON(make(chan int)); err == nil {
		t.Fatal("WriteJSON of a channel succeeded")
	}
	if err := sc.WriteJSON("after"); err != nil {
		t.Fatal(err)
	}
	// The failed encode must not have sent anything.
	if err := client.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}
	typ, data, err := client.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if typ != websocket.TextMessage || string(data) != `"after"` {
		t.Fatalf("first message type %d %q, want text \"after\"", typ, data)
	}
}

func TestConnClosedWhenHandlerReturns(t *testing.T) {
	t.Parallel()
	accepted := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := Implementation{}.Accept(w, r, gqlOptions)
		accepted <- err
		// Return without closing, as gqlgen does on some init failures.
	}))
	t.Cleanup(srv.Close)
	c := dial(t, wsURL(srv.URL))
	if err := wait(t, accepted, "Accept"); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	ce, _ := readClose(t, c)
	if ce.Code != websocket.CloseAbnormalClosure {
		t.Fatalf("client saw close %d, want 1006 (socket closed)", ce.Code)
	}
}

func TestInvalidInitPayloadDoesNotLeaveSocketOpen(t *testing.T) {
	t.Parallel()
	// gqlgen returns without closing when the connection_init payload is not
	// a JSON object. The socket must still be closed.
	f := newFixture(t, New(websocket.Upgrader{}), transport.Websocket{})
	c := dial(t, f.url, protoTransportWS)
	send(t, c, msg{Type: "connection_init", Payload: json.RawMessage(`[1]`)})
	ce, seen := readClose(t, c)
	if ce.Code != websocket.CloseAbnormalClosure || len(seen) > 0 {
		t.Fatalf("close %d after %q, want 1006 and nothing before it", ce.Code, seen)
	}
	wait(t, f.served, "handler return")
}
