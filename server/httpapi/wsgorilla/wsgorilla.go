// Package wsgorilla runs gqlgen's websocket transport on
// github.com/gorilla/websocket.
//
// Since v0.17.98, gqlgen's transport.Websocket no longer ships a gorilla
// backend. Instead it accepts connections through a
// transport.WebsocketImplementation. This package provides one that upgrades
// with a gorilla websocket.Upgrader and follows the same contract as gqlgen's
// own CoderWebsocketImplementation:
//
//   - Subprotocols: the Upgrader's Subprotocols come first, in their order.
//     gqlgen's subprotocols (graphql-ws, graphql-transport-ws) follow if they
//     are not already listed. Gorilla picks the first server protocol that the
//     client offers, so the Upgrader's list sets the preference.
//   - Reads: NextReader returns transport.ErrWebsocketClosed when the peer
//     closes normally (close code 1000, or a close frame with no status, 1005).
//     Any other close code, and an abrupt disconnect, comes back as gorilla's
//     error. gqlgen reports those to ErrorFunc.
//   - Read limit: the connection implements transport.WebsocketReadLimiter, so
//     transport.Websocket.PayloadReadLimit (1 MiB by default) is enforced.
//     When a message is too big, gorilla closes the connection with code 1009
//     (message too big).
//   - Read deadline: the connection implements
//     transport.WebsocketReadDeadliner, so PingPongInterval can drop a peer
//     that stops answering pings. When the deadline expires, the socket is
//     closed without a close frame, and the client sees 1006 (abnormal
//     closure), as gqlgen documents for a missing pong.
//   - Writes: WriteJSON calls are serialized by a mutex, so any number of
//     goroutines may call them (gorilla allows one writer at a time). Each
//     message is encoded into a pooled buffer and goes out as one frame in one
//     write. Gorilla writes each message with its own write call and offers no
//     way to put two messages in one; gqlgen writes one message per event, so
//     there is nothing to batch anyway.
//   - Shared frames: beyond the transport contract, a connection can write a
//     message framed once for many connections (NextFrame, WritePrepared),
//     serialised with WriteJSON, and tells the id of the graphql-transport-ws
//     subscribe message it is reading (SubscribeID), which gqlgen does not pass
//     on. Baton's shared subscriptions use them (docs/adr/0030).
//   - Memory: unless the Upgrader has a WriteBufferPool, connections share a
//     pool of write buffers, so an idle connection holds none (gorilla would
//     otherwise keep one per connection for its lifetime: 40 MB at 10,000
//     subscribers).
//     WriteClose and Close may be called at any time, from any goroutine.
//   - Lifetime: the connection is closed when the upgrade request's context
//     ends. net/http ends it when the handler returns. gqlgen runs the whole
//     connection inside the handler, and it already closes the connection
//     when that context is cancelled. This rule covers the paths where gqlgen
//     returns without closing, such as a connection_init payload that is not
//     a JSON object. Without it, those sockets would stay open with nobody
//     reading them.
package wsgorilla

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
)

// defaultCloseTimeout bounds how long WriteClose waits to send the close
// frame when Implementation.WriteTimeout is zero.
const defaultCloseTimeout = time.Second

// maxCloseReason is the longest close reason that fits in a control frame:
// 125 bytes of payload minus 2 bytes of close code (RFC 6455, section 5.5).
const maxCloseReason = 123

// Implementation is a transport.WebsocketImplementation that upgrades HTTP
// requests with a gorilla websocket.Upgrader. Set it as the Implementation
// field of gqlgen's transport.Websocket. The zero value works: it uses a zero
// websocket.Upgrader, which accepts only same-origin requests, and sets no
// write timeout.
type Implementation struct {
	// Upgrader upgrades each request. Its CheckOrigin, buffer sizes,
	// HandshakeTimeout, Error and EnableCompression settings are used as they
	// are. Its Subprotocols are copied, then gqlgen's subprotocols are added
	// to the copy. The Upgrader itself is never changed.
	Upgrader websocket.Upgrader

	// WriteTimeout bounds each message write. It also bounds the close frame
	// written by WriteClose, which otherwise has one second. When a write
	// times out, gorilla marks the connection broken and later writes fail.
	// Zero means data writes have no deadline, like gqlgen's coder-based
	// implementation. In that case a peer that stops reading can block the
	// writer for as long as TCP buffers stay full.
	WriteTimeout time.Duration
}

var _ transport.WebsocketImplementation = Implementation{}

// New returns an Implementation that upgrades with u. Set CheckOrigin and any
// other upgrade options on u. To set a write timeout, set WriteTimeout on the
// result.
func New(u websocket.Upgrader) Implementation {
	return Implementation{Upgrader: u}
}

// Accept upgrades the request to a websocket connection and returns it as a
// transport.WebsocketConn.
//
// options.ResponseHeader is sent with the 101 response. As with any gorilla
// upgrade, headers already set on w are not sent. If the upgrade fails,
// gorilla has already written an HTTP error response (through Upgrader.Error
// if it is set), and Accept returns the error.
//
// The returned connection is closed when r.Context() ends, which net/http
// does once the handler returns. So the caller must use the connection inside
// the handler, as gqlgen's transport.Websocket does.
func (i Implementation) Accept(
	w http.ResponseWriter,
	r *http.Request,
	options transport.WebsocketAcceptOptions,
) (transport.WebsocketConn, error) {
	u := i.Upgrader
	u.Subprotocols = mergeSubprotocols(i.Upgrader.Subprotocols, options.Subprotocols)
	if u.WriteBufferPool == nil {
		u.WriteBufferPool = writeBufferPool(u.WriteBufferSize)
	}

	var header http.Header
	if len(options.ResponseHeader) > 0 {
		header = options.ResponseHeader.Clone()
	}

	ws, err := u.Upgrade(w, r, header)
	if err != nil {
		return nil, err
	}
	c := newConn(ws, i.WriteTimeout)
	context.AfterFunc(r.Context(), func() { _ = c.Close() })
	return c, nil
}

// writeBufferPools holds a *sync.Pool of gorilla write buffers per buffer size: gorilla
// expects every buffer of a pool to have the connection's WriteBufferSize.
var writeBufferPools sync.Map

func writeBufferPool(size int) websocket.BufferPool {
	if p, ok := writeBufferPools.Load(size); ok {
		return p.(*sync.Pool)
	}
	p, _ := writeBufferPools.LoadOrStore(size, new(sync.Pool))
	return p.(*sync.Pool)
}

// encoder is a reusable JSON encoder and its output buffer.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := new(encoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxPooledEncoder is the largest buffer put back in the pool, so that one huge message
// does not keep its memory forever.
const maxPooledEncoder = 64 << 10

// mergeSubprotocols returns a new slice: own in order, then each entry of
// extra that own does not already contain. It does not change either input.
func mergeSubprotocols(own, extra []string) []string {
	merged := make([]string, 0, len(own)+len(extra))
	merged = append(merged, own...)
	for _, p := range extra {
		if !slices.Contains(merged, p) {
			merged = append(merged, p)
		}
	}
	return merged
}

// conn adapts a *websocket.Conn to transport.WebsocketConn and its optional
// interfaces.
//
// Gorilla allows one concurrent reader and one concurrent writer. Close and
// WriteControl may be called concurrently with anything. gqlgen reads from
// one goroutine, but it writes, closes and sets read deadlines from several.
// So:
//   - data writes hold writeMu;
//   - WriteClose uses WriteControl, which is safe to call concurrently;
//   - SetReadDeadline goes to the net.Conn, which is safe to call concurrently
//     and also affects a read that is already blocked;
//   - Close takes no lock, so it can always unblock a stuck reader or writer.
type conn struct {
	ws           *websocket.Conn
	writeTimeout time.Duration

	writeMu sync.Mutex

	// read is the message being read now, up to maxKeptMessage bytes (the read loop's
	// alone: NextReader and Read run in gqlgen's one reading goroutine).
	read     []byte
	readKept bool

	closeOnce sync.Once
	closeErr  error
}

var (
	_ transport.WebsocketConn          = (*conn)(nil)
	_ transport.WebsocketReadLimiter   = (*conn)(nil)
	_ transport.WebsocketReadDeadliner = (*conn)(nil)
)

func newConn(ws *websocket.Conn, writeTimeout time.Duration) *conn {
	return &conn{ws: ws, writeTimeout: writeTimeout}
}

// Close closes the underlying network connection at once, without a close
// frame. Only the first call closes anything. Later calls return the first
// call's result.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = c.ws.Close()
	})
	return c.closeErr
}

// NextReader returns the next data message. A normal close by the peer comes
// back as transport.ErrWebsocketClosed. An expired read deadline closes the
// connection (see SetReadDeadline).
func (c *conn) NextReader() (int, io.Reader, error) {
	c.read, c.readKept = c.read[:0], true
	messageType, r, err := c.ws.NextReader()
	if err != nil {
		return messageType, nil, c.readError(err)
	}
	return messageType, &messageReader{c: c, r: r}, nil
}

// maxKeptMessage bounds the part of an incoming message a conn keeps for SubscribeID: a
// subscribe message longer than this gets no id (its events go through gqlgen's transport).
const maxKeptMessage = 64 << 10

// keep adds p, just read, to the message being read.
func (c *conn) keep(p []byte) {
	if !c.readKept {
		return
	}
	if len(c.read)+len(p) > maxKeptMessage {
		c.read, c.readKept = c.read[:0], false
		return
	}
	c.read = append(c.read, p...)
}

// SubscribeID returns the id of the graphql-transport-ws "subscribe" message read last, false
// when that message was something else, too long to keep, or the subprotocol is another. It
// is for the goroutine that reads (gqlgen calls its operation-context mutators there, while it
// handles the message).
func (c *conn) SubscribeID() (string, bool) {
	if c.ws.Subprotocol() != transportWS || !c.readKept {
		return "", false
	}
	var m struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}
	if json.Unmarshal(c.read, &m) != nil || m.Type != "subscribe" || m.ID == "" {
		return "", false
	}
	return m.ID, true
}

// transportWS is the subprotocol whose "next" messages NextFrame builds.
const transportWS = "graphql-transport-ws"

// NextFrame returns graphql-transport-ws's "next" message of subscription id carrying
// payload (a GraphQL response as JSON), framed once for any number of connections: the bytes
// gqlgen's transport would send for it.
func NextFrame(payload []byte, id string) (*websocket.PreparedMessage, error) {
	msg, err := nextMessage(payload, id)
	if err != nil {
		return nil, err
	}
	return websocket.NewPreparedMessage(websocket.TextMessage, msg)
}

// nextMessage is the "next" message of subscription id carrying payload, spelt as gqlgen's
// transport encodes its message struct (payload, id, type; HTML characters escaped).
func nextMessage(payload []byte, id string) ([]byte, error) {
	quoted, err := json.Marshal(id)
	if err != nil {
		return nil, err
	}
	msg := make([]byte, 0, len(payload)+len(quoted)+32)
	msg = append(msg, `{"payload":`...)
	msg = append(msg, payload...)
	msg = append(msg, `,"id":`...)
	msg = append(msg, quoted...)
	msg = append(msg, `,"type":"next"}`...)
	return msg, nil
}

// WritePrepared writes a prepared message (see NextFrame), serialised with WriteJSON and
// under the same write timeout.
func (c *conn) WritePrepared(m *websocket.PreparedMessage) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.writeTimeout > 0 {
		if err := c.ws.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
			return err
		}
	}
	return c.ws.WritePreparedMessage(m)
}

// readError maps a gorilla read error to the transport contract.
func (c *conn) readError(err error) error {
	if websocket.IsCloseError(err,
		websocket.CloseNormalClosure,
		websocket.CloseNoStatusReceived,
	) {
		return transport.ErrWebsocketClosed
	}
	if isTimeout(err) {
		// After a read timeout, gorilla's read side cannot be used again.
		// Close the socket now, as the coder-based adapter does, so the peer
		// sees an abnormal closure (1006). Otherwise gqlgen would follow up
		// with a normal 1000 close frame.
		_ = c.Close()
	}
	return err
}

// WriteJSON encodes v and writes it as one text message. Writes from
// different goroutines are serialized.
func (c *conn) WriteJSON(v any) error {
	// Encode before writing: if encoding fails, nothing is sent. (gorilla's
	// own WriteJSON would send an empty message.) The encoding is the same as
	// json.Marshal's, into a pooled buffer.
	e := encoders.Get().(*encoder)
	defer func() {
		if e.buf.Cap() <= maxPooledEncoder {
			e.buf.Reset()
			encoders.Put(e)
		}
	}()
	if err := e.enc.Encode(v); err != nil {
		return err
	}
	data := bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))

	c.writeMu.Lock()
	defer c.writeMu.Unlock()

	if c.writeTimeout > 0 {
		if err := c.ws.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
			return err
		}
	}
	// gorilla copies data into its frame buffer (one write per frame), so the
	// pooled buffer is free again when WriteMessage returns.
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// WriteClose sends a close frame with closeCode and message. It does not wait
// for the peer's reply, and it does not close the connection. Reasons longer
// than a control frame allows are cut to 123 bytes at a character boundary,
// so the close code still goes out. Once a close frame has been sent, later
// calls fail with websocket.ErrCloseSent.
func (c *conn) WriteClose(closeCode int, message string) error {
	timeout := c.writeTimeout
	if timeout <= 0 {
		timeout = defaultCloseTimeout
	}
	return c.ws.WriteControl(
		websocket.CloseMessage,
		websocket.FormatCloseMessage(closeCode, truncateCloseReason(message)),
		time.Now().Add(timeout),
	)
}

// Subprotocol returns the negotiated subprotocol, or "" if there is none.
func (c *conn) Subprotocol() string {
	return c.ws.Subprotocol()
}

// SetReadLimit caps the size of an incoming message. A bigger message makes
// gorilla send close code 1009 and fail the read with websocket.ErrReadLimit.
func (c *conn) SetReadLimit(limit int64) {
	c.ws.SetReadLimit(limit)
}

// SetReadDeadline sets the deadline for reads, including one that is already
// blocked. The zero time clears it. When a read hits the deadline, the
// connection is closed (see NextReader). It is safe to call from any
// goroutine.
func (c *conn) SetReadDeadline(t time.Time) error {
	return c.ws.NetConn().SetReadDeadline(t)
}

// messageReader wraps a message body reader. If the deadline expires in the
// middle of a message, the connection is closed, as it is in NextReader.
type messageReader struct {
	c *conn
	r io.Reader
}

func (m *messageReader) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.c.keep(p[:n])
	if err != nil && isTimeout(err) {
		_ = m.c.Close()
	}
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// truncateCloseReason makes reason fit in a close frame. Invalid UTF-8 is
// dropped, because peers reject a close reason that is not valid UTF-8. The
// result is cut to at most maxCloseReason bytes, without splitting a
// character.
func truncateCloseReason(reason string) string {
	reason = strings.ToValidUTF8(reason, "")
	if len(reason) <= maxCloseReason {
		return reason
	}
	cut := maxCloseReason
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}
