package cluster

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Client talks to one instance's GraphQL API with a bearer token: POST for queries and
// mutations, graphql-transport-ws over gorilla/websocket for subscriptions.
type Client struct {
	Endpoint string // http://host:port/graphql
	Token    string
	HTTP     *http.Client
}

// sharedTransport keeps connections to the instances alive across calls; a burst of calls
// may open many at once.
var sharedTransport = &http.Transport{
	MaxIdleConns:        2000,
	MaxIdleConnsPerHost: 1000,
	IdleConnTimeout:     30 * time.Second,
}

// NewClient returns a client of the instance at base (http://host:port).
func NewClient(base, token string) *Client {
	return &Client{Endpoint: strings.TrimSuffix(base, "/") + "/graphql", Token: token,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: sharedTransport}}
}

// GQLError is a top-level GraphQL error.
type GQLError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code string `json:"code"`
	} `json:"extensions"`
}

// UserError is a mutation payload's user error.
type UserError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Response is a raw GraphQL answer.
type Response struct {
	HTTPStatus int
	Data       json.RawMessage `json:"data"`
	Errors     []GQLError      `json:"errors"`
}

// CallError is a failed call: transport failure, HTTP status or top-level GraphQL error.
type CallError struct {
	HTTPStatus int    // 0 when the request got no answer
	Code       string // extensions.code of the first GraphQL error, if any
	Msg        string
}

func (e *CallError) Error() string {
	return fmt.Sprintf("graphql: HTTP %d %s: %s", e.HTTPStatus, e.Code, e.Msg)
}

// Raw posts a query and returns the decoded answer, whatever its status.
func (c *Client) Raw(ctx context.Context, query string, vars map[string]any) (*Response, error) {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/graphql-response+json, application/json")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, &CallError{Msg: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, &CallError{HTTPStatus: resp.StatusCode, Msg: err.Error()}
	}
	r := &Response{HTTPStatus: resp.StatusCode}
	if err := json.Unmarshal(b, r); err != nil {
		return r, &CallError{HTTPStatus: resp.StatusCode, Msg: fmt.Sprintf("unreadable answer %.200q", b)}
	}
	return r, nil
}

// Do runs a query or mutation and decodes its data into out (if not nil). A transport
// failure, a non-200 status or a top-level error is a *CallError.
func (c *Client) Do(ctx context.Context, query string, vars map[string]any, out any) error {
	r, err := c.Raw(ctx, query, vars)
	if err != nil {
		return err
	}
	if len(r.Errors) > 0 {
		return &CallError{HTTPStatus: r.HTTPStatus, Code: r.Errors[0].Extensions.Code, Msg: r.Errors[0].Message}
	}
	if r.HTTPStatus != http.StatusOK {
		return &CallError{HTTPStatus: r.HTTPStatus, Msg: "no errors in the answer"}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Data, out)
}

// RunState is a run as the API shows it.
type RunState struct {
	ID         string `json:"id"`
	JobName    string `json:"jobName"`
	Status     string `json:"status"`
	Mode       string `json:"mode"`
	Instance   string `json:"instance"`
	Checkpoint string `json:"checkpoint"`
	StartCP    string `json:"startCheckpoint"`
	StopReason string `json:"stopReason"`
	Message    string `json:"message"`
	Progress   struct {
		Total     *int64 `json:"total"`
		Processed int64  `json:"processed"`
		Succeeded int64  `json:"succeeded"`
		Failed    int64  `json:"failed"`
		Skipped   int64  `json:"skipped"`
		Ambiguous int64  `json:"ambiguous"`
	} `json:"progress"`
}

// DBID returns the run's database id (the global id is base64 of "Run:<id>").
func (r *RunState) DBID() int64 { id, _ := RunDBID(r.ID); return id }

// Final reports whether the run has ended.
func (r *RunState) Final() bool { return r.Status != "STARTING" && r.Status != "RUNNING" }

// RunFields is the selection of a Run the harness reads.
const RunFields = `id jobName status mode instance checkpoint startCheckpoint stopReason message
	progress { total processed succeeded failed skipped ambiguous }`

// RunDBID decodes a Run's global id.
func RunDBID(global string) (int64, error) {
	raw, err := base64.StdEncoding.DecodeString(global)
	if err != nil {
		return 0, err
	}
	typ, key, ok := strings.Cut(string(raw), ":")
	if !ok || typ != "Run" {
		return 0, fmt.Errorf("%q is not a Run id", global)
	}
	return strconv.ParseInt(key, 10, 64)
}

// RunGlobalID encodes a run's database id as its global id.
func RunGlobalID(id int64) string {
	return base64.StdEncoding.EncodeToString([]byte("Run:" + strconv.FormatInt(id, 10)))
}

// StartResult is what startJob answered.
type StartResult struct {
	Run        *RunState
	UserErrors []UserError
}

// Code returns the first user error's code, or "".
func (s *StartResult) Code() string {
	if len(s.UserErrors) == 0 {
		return ""
	}
	return s.UserErrors[0].Code
}

// StartJob calls startJob(input: {name, mode}).
func (c *Client) StartJob(ctx context.Context, name, mode string) (*StartResult, error) {
	var out struct {
		StartJob struct {
			Run        *RunState   `json:"run"`
			UserErrors []UserError `json:"userErrors"`
		} `json:"startJob"`
	}
	err := c.Do(ctx, `mutation($input: StartJobInput!) { startJob(input: $input) { run { `+RunFields+` } userErrors { code message } } }`,
		map[string]any{"input": map[string]any{"name": name, "mode": mode}}, &out)
	if err != nil {
		return nil, err
	}
	return &StartResult{Run: out.StartJob.Run, UserErrors: out.StartJob.UserErrors}, nil
}

// CancelRun calls cancelRun(input: {runId}) and returns the user errors' codes.
func (c *Client) CancelRun(ctx context.Context, runID int64) ([]UserError, error) {
	var out struct {
		CancelRun struct {
			UserErrors []UserError `json:"userErrors"`
		} `json:"cancelRun"`
	}
	err := c.Do(ctx, `mutation($input: CancelRunInput!) { cancelRun(input: $input) { run { id } userErrors { code message } } }`,
		map[string]any{"input": map[string]any{"runId": RunGlobalID(runID)}}, &out)
	if err != nil {
		return nil, err
	}
	return out.CancelRun.UserErrors, nil
}

// Run reads run(id).
func (c *Client) Run(ctx context.Context, runID int64) (*RunState, error) {
	var out struct {
		Run *RunState `json:"run"`
	}
	if err := c.Do(ctx, `query($id: ID!) { run(id: $id) { `+RunFields+` } }`,
		map[string]any{"id": RunGlobalID(runID)}, &out); err != nil {
		return nil, err
	}
	if out.Run == nil {
		return nil, fmt.Errorf("run %d not found", runID)
	}
	return out.Run, nil
}

// Runs reads runs(jobName, first) (newest first).
func (c *Client) Runs(ctx context.Context, job string, first int) ([]RunState, error) {
	var out struct {
		Runs struct {
			Nodes []RunState `json:"nodes"`
		} `json:"runs"`
	}
	err := c.Do(ctx, `query($job: String, $first: Int) { runs(jobName: $job, first: $first) { nodes { `+RunFields+` } } }`,
		map[string]any{"job": job, "first": first}, &out)
	return out.Runs.Nodes, err
}

// SetSchedule calls updateJobSchedule(input: {name, enabled}).
func (c *Client) SetSchedule(ctx context.Context, job string, enabled bool) error {
	var out struct {
		U struct {
			UserErrors []UserError `json:"userErrors"`
		} `json:"updateJobSchedule"`
	}
	err := c.Do(ctx, `mutation($input: UpdateJobScheduleInput!) { updateJobSchedule(input: $input) { userErrors { code message } } }`,
		map[string]any{"input": map[string]any{"name": job, "enabled": enabled}}, &out)
	if err != nil {
		return err
	}
	if len(out.U.UserErrors) > 0 {
		return fmt.Errorf("updateJobSchedule %s: %s %s", job, out.U.UserErrors[0].Code, out.U.UserErrors[0].Message)
	}
	return nil
}

// SubEvent is one state a subscription delivered, with when it arrived.
type SubEvent struct {
	At  time.Time
	Run RunState
}

// Subscription is a live runProgress subscription over graphql-transport-ws.
type Subscription struct {
	conn *websocket.Conn
	done chan struct{}
	wmu  sync.Mutex // serialises writes to conn

	mu        sync.Mutex
	events    []SubEvent
	err       error
	completed bool
	notify    chan struct{}
}

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// SubscribeRun opens a WebSocket, authenticates in connection_init and subscribes to
// runProgress(runId). Events are collected until the server completes the subscription, the
// connection breaks, or ctx ends.
func (c *Client) SubscribeRun(ctx context.Context, runID int64) (*Subscription, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return nil, err
	}
	u.Scheme = "ws"
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := d.DialContext(ctx, u.String(), nil)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("websocket %s: HTTP %d: %w", u, resp.StatusCode, err)
		}
		return nil, fmt.Errorf("websocket %s: %w", u, err)
	}
	s := &Subscription{conn: conn, done: make(chan struct{}), notify: make(chan struct{}, 1)}
	initPayload, _ := json.Marshal(map[string]string{"authorization": "Bearer " + c.Token})
	if err := s.send(wsMessage{Type: "connection_init", Payload: initPayload}); err != nil {
		conn.Close()
		return nil, err
	}
	sub, _ := json.Marshal(map[string]any{
		"query":     `subscription($id: ID!) { runProgress(runId: $id) { ` + RunFields + ` } }`,
		"variables": map[string]any{"id": RunGlobalID(runID)},
	})
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	go func() {
		defer close(s.done)
		defer stop()
		defer conn.Close()
		s.read(sub)
	}()
	return s, nil
}

// send writes m to the connection.
func (s *Subscription) send(m wsMessage) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return s.conn.WriteJSON(m)
}

// read takes the server's messages, subscribing with the payload sub once the server
// acknowledges the connection, until the subscription ends.
func (s *Subscription) read(sub json.RawMessage) {
	for {
		var m wsMessage
		if err := s.conn.ReadJSON(&m); err != nil {
			s.finish(fmt.Errorf("read: %w", err), false)
			return
		}
		switch m.Type {
		case "connection_ack":
			if err := s.send(wsMessage{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
				s.finish(err, false)
				return
			}
		case "ping":
			_ = s.send(wsMessage{Type: "pong"})
		case "next":
			if err := s.next(m.Payload); err != nil {
				s.finish(err, false)
				return
			}
		case "error":
			s.finish(fmt.Errorf("subscription refused: %s", m.Payload), false)
			return
		case "complete":
			s.finish(nil, true)
			return
		}
	}
}

// next records the run state of a next message's payload.
func (s *Subscription) next(payload json.RawMessage) error {
	var p struct {
		Data struct {
			RunProgress *RunState `json:"runProgress"`
		} `json:"data"`
		Errors []GQLError `json:"errors"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("decode event: %w", err)
	}
	if len(p.Errors) > 0 {
		return fmt.Errorf("event error: %s %s", p.Errors[0].Extensions.Code, p.Errors[0].Message)
	}
	if p.Data.RunProgress != nil {
		s.add(*p.Data.RunProgress)
	}
	return nil
}

func (s *Subscription) add(r RunState) {
	s.mu.Lock()
	s.events = append(s.events, SubEvent{At: time.Now(), Run: r})
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *Subscription) finish(err error, completed bool) {
	s.mu.Lock()
	if s.err == nil && !s.completed {
		s.err, s.completed = err, completed
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Close ends the subscription.
func (s *Subscription) Close() {
	_ = s.conn.Close()
	<-s.done
}

// Events returns a copy of what arrived so far.
func (s *Subscription) Events() []SubEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SubEvent(nil), s.events...)
}

// Len returns how many events arrived so far.
func (s *Subscription) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.events)
}

// State reports whether the server completed the subscription and the error that ended it.
func (s *Subscription) State() (completed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.completed, s.err
}

// WaitFor waits until an event at index >= from satisfies ok, and returns it with its index.
// It fails if the subscription ends first or the timeout passes.
func (s *Subscription) WaitFor(from int, timeout time.Duration, ok func(RunState) bool) (SubEvent, int, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		for i := from; i < len(s.events); i++ {
			if ok(s.events[i].Run) {
				e := s.events[i]
				s.mu.Unlock()
				return e, i, nil
			}
		}
		from = max(from, len(s.events))
		completed, err := s.completed, s.err
		s.mu.Unlock()
		if completed || err != nil {
			return SubEvent{}, 0, fmt.Errorf("subscription ended (completed=%v, err=%v) before the awaited event", completed, err)
		}
		select {
		case <-s.notify:
		case <-deadline.C:
			return SubEvent{}, 0, errors.New("timed out waiting for a subscription event")
		}
	}
}
