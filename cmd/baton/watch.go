package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// watchInterval is how often a watch prints a line when stdout is not a terminal.
const watchInterval = time.Second

// watchRun follows a run over a graphql-transport-ws subscription until it ends, and returns
// nil only when it SUCCEEDED cleanly (runEndError otherwise). On a terminal it redraws a
// progress bar on every change; elsewhere (a pipe, a file, a CI log) it prints the run's state
// as one line every watchInterval, whether or not it changed, and its final state; asJSON
// makes each such line a JSON object (a run as `runs show --output json` prints it).
func (c *apiClient) watchRun(ctx context.Context, id string, stdout io.Writer, asJSON bool) error {
	tty := isTerminal(stdout) && !asJSON
	var mu sync.Mutex
	var latest, printed *wireRun
	printLine := func(r *wireRun) {
		printed = r
		if asJSON {
			b, _ := json.Marshal(runOut(r))
			fmt.Fprintf(stdout, "%s\n", b)
			return
		}
		line := fmt.Sprintf("run %s %-9s %s", runNumber(r.ID), r.Status, progressText(r))
		if sh := shardsText(r); sh != "" {
			line += " · " + sh
		}
		if tty {
			fmt.Fprintf(stdout, "\r\033[K%s", line)
		} else {
			fmt.Fprintln(stdout, line)
		}
	}
	done := make(chan struct{})
	ticked := make(chan struct{})
	if !tty {
		go func() {
			defer close(ticked)
			t := time.NewTicker(watchInterval)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					mu.Lock()
					if latest != nil {
						printLine(latest)
					}
					mu.Unlock()
				}
			}
		}()
	} else {
		close(ticked)
	}
	final, err := c.subscribeRun(ctx, id, func(r *wireRun) {
		mu.Lock()
		defer mu.Unlock()
		if tty || latest == nil {
			printLine(r) // elsewhere, the first state at once, then once a second
		}
		latest = r
	})
	close(done)
	<-ticked
	if final != nil && printed != final {
		printLine(final) // the final state, whenever it came
	}
	if tty {
		fmt.Fprintln(stdout)
	}
	if err != nil {
		return err
	}
	if final == nil {
		return &codedError{code: exitAPI, err: fmt.Errorf("run %s: the subscription ended before the run did", runNumber(id))}
	}
	return runEndError(final)
}

// progressText draws "[#####.....]  50.0% 5/10 (1 failed)".
func progressText(r *wireRun) string {
	p := r.Progress
	const width = 20
	var b strings.Builder
	if p.Percent != nil {
		filled := int(*p.Percent / 100 * width)
		b.WriteString("[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]")
		fmt.Fprintf(&b, " %5.1f%%", *p.Percent)
	} else {
		b.WriteString("[" + strings.Repeat("?", width) + "]")
	}
	if p.Total != nil {
		fmt.Fprintf(&b, " %d/%d", p.Processed, *p.Total)
	} else {
		fmt.Fprintf(&b, " %d", p.Processed)
	}
	if p.Failed > 0 || p.Ambiguous > 0 {
		fmt.Fprintf(&b, " (%d failed, %d ambiguous)", p.Failed, p.Ambiguous)
	}
	return b.String()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// subscribeRun runs the runProgress subscription, calling each for every state, and returns
// the last state received once the server completes the subscription.
func (c *apiClient) subscribeRun(ctx context.Context, id string, each func(*wireRun)) (*wireRun, error) {
	u, _ := url.Parse(c.endpoint)
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	dialer := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 10 * time.Second}
	conn, resp, err := dialer.DialContext(ctx, u.String(), nil)
	if err != nil {
		if resp != nil {
			return nil, &codedError{code: exitAPI, err: fmt.Errorf("open websocket %s: HTTP %d", u, resp.StatusCode)}
		}
		return nil, &codedError{code: exitAPI, err: fmt.Errorf("open websocket %s: %w", u, err)}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	send := func(m wsMessage) error { return conn.WriteJSON(m) }
	initPayload, _ := json.Marshal(map[string]string{"authorization": "Bearer " + c.token})
	if err := send(wsMessage{Type: "connection_init", Payload: initPayload}); err != nil {
		return nil, err
	}
	sub, _ := json.Marshal(map[string]any{
		"query":     `subscription RunProgress($id: ID!) { runProgress(runId: $id) { ` + runFields + shardFields + ` } }`,
		"variables": map[string]any{"id": id},
	})
	var last *wireRun
	for {
		var m wsMessage
		if err := conn.ReadJSON(&m); err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				if ce.Code == 4401 || ce.Code == 4403 {
					return last, &codedError{code: exitAuth, err: fmt.Errorf("server closed the subscription: %d %s", ce.Code, ce.Text)}
				}
				return last, &codedError{code: exitAPI, err: fmt.Errorf("server closed the subscription: %d %s", ce.Code, ce.Text)}
			}
			return last, &codedError{code: exitAPI, err: fmt.Errorf("read subscription: %w", err)}
		}
		switch m.Type {
		case "connection_ack":
			if err := send(wsMessage{ID: "1", Type: "subscribe", Payload: sub}); err != nil {
				return last, err
			}
		case "ping":
			if err := send(wsMessage{Type: "pong"}); err != nil {
				return last, err
			}
		case "next":
			var payload struct {
				Data struct {
					RunProgress *wireRun `json:"runProgress"`
				} `json:"data"`
				Errors []gqlError `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &payload); err != nil {
				return last, fmt.Errorf("decode subscription event: %w", err)
			}
			if len(payload.Errors) > 0 {
				return last, &apiError{Code: payload.Errors[0].Extensions.Code, Message: payload.Errors[0].Message}
			}
			if r := payload.Data.RunProgress; r != nil {
				last = r
				each(r)
			}
		case "error":
			var errs []gqlError
			_ = json.Unmarshal(m.Payload, &errs)
			if len(errs) > 0 {
				return last, &apiError{Code: errs[0].Extensions.Code, Message: errs[0].Message}
			}
			return last, &codedError{code: exitAPI, err: errors.New("subscription refused")}
		case "complete":
			_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			return last, nil
		}
	}
}
