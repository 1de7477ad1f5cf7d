package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/baton-run/baton/runner"
	bt "github.com/baton-run/baton/runner/batontype"
	"github.com/baton-run/baton/tracing"
)

// The wire format of ProviderHandler, as small JSON bodies:
//
//	POST   /apply          {"idempotencyKey","target","amount"} → 200 {"id","appliedAt","replayed"}
//	GET    /lookup?key=K   → 200 {"found","id"}
//	GET    /limit          → 200 ProviderLimit
//	PUT    /limit          ProviderLimit → 200 ProviderLimit; 400 INVALID_INPUT with its field
//	GET    /records        → 200 LimitRecord
//	DELETE /records        → 204, the records reset
//	GET    /stats          → 200 ProviderStats
//
// A failed call answers {"error","kind"} (and "code", "field" for bad input) with the status a
// real provider would give: 429 and 503 with Retry-After when the provider asked for a wait,
// 409, 422, 400; 504 with kind "timeout" for a payment made whose answer was lost; 503 with
// kind "not_sent" for a call abandoned before anything was applied; 500 with kind "internal"
// for a failure whose effect is unknown.
const (
	kindStatus   = "status"
	kindTimeout  = "timeout"
	kindNotSent  = "not_sent"
	kindInternal = "internal"
)

type applyRequest struct {
	IdempotencyKey string `json:"idempotencyKey"`
	Target         string `json:"target"`
	Amount         int64  `json:"amount"`
}

type applyResponse struct {
	ID        int64     `json:"id"`
	AppliedAt time.Time `json:"appliedAt"`
	Replayed  bool      `json:"replayed"`
}

type lookupResponse struct {
	Found bool  `json:"found"`
	ID    int64 `json:"id,omitempty"`
}

type errorBody struct {
	Error string `json:"error"`
	Kind  string `json:"kind"`
	Code  string `json:"code,omitempty"`
	Field string `json:"field,omitempty"`
}

// maxRequestBody bounds what the handler reads of a request.
const maxRequestBody = 1 << 16

// ProviderHandler serves p over HTTP (the wire format above), so several Baton instances can
// share one provider, its limit and its records; NewHTTPProvider is its client.
func ProviderHandler(p *Provider) http.Handler {
	h := &providerHandler{p: p}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apply", h.apply)
	mux.HandleFunc("GET /lookup", h.lookup)
	mux.HandleFunc("GET /limit", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, p.Limit()) })
	mux.HandleFunc("PUT /limit", h.setLimit)
	mux.HandleFunc("GET /records", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, p.Records()) })
	mux.HandleFunc("DELETE /records", func(w http.ResponseWriter, _ *http.Request) {
		p.ResetRecords()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, p.Stats()) })
	return mux
}

type providerHandler struct{ p *Provider }

func (h *providerHandler) apply(w http.ResponseWriter, r *http.Request) {
	var req applyRequest
	if err := readJSON(w, r, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error(), Kind: kindStatus})
		return
	}
	eff, err := h.p.Apply(r.Context(), Payment{IdempotencyKey: req.IdempotencyKey, Target: req.Target, Amount: req.Amount})
	var se *StatusError
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, applyResponse{ID: eff.ID, AppliedAt: eff.AppliedAt, Replayed: eff.Replayed})
	case errors.As(err, &se):
		if se.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(se.RetryAfter.Seconds()))))
		}
		writeJSON(w, se.Code, errorBody{Error: se.Message, Kind: kindStatus})
	case errors.Is(err, ErrTimeout):
		writeJSON(w, http.StatusGatewayTimeout, errorBody{Error: err.Error(), Kind: kindTimeout})
	case errors.Is(err, ErrNotSent):
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: err.Error(), Kind: kindNotSent})
	default:
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: err.Error(), Kind: kindInternal})
	}
}

func (h *providerHandler) lookup(w http.ResponseWriter, r *http.Request) {
	id, found, err := h.p.Lookup(r.Context(), r.URL.Query().Get("key"))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: err.Error(), Kind: kindInternal})
		return
	}
	writeJSON(w, http.StatusOK, lookupResponse{Found: found, ID: id})
}

func (h *providerHandler) setLimit(w http.ResponseWriter, r *http.Request) {
	var lim ProviderLimit
	if err := readJSON(w, r, &lim); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody{Error: err.Error(), Kind: kindStatus, Code: string(bt.CodeInvalidInput)})
		return
	}
	if err := h.p.SetLimit(lim); err != nil {
		var be *bt.Error
		if errors.As(err, &be) {
			writeJSON(w, http.StatusBadRequest, errorBody{Error: be.Message, Kind: kindStatus, Code: string(be.Code), Field: be.Field})
			return
		}
		writeJSON(w, http.StatusInternalServerError, errorBody{Error: err.Error(), Kind: kindInternal})
		return
	}
	writeJSON(w, http.StatusOK, h.p.Limit())
}

// readJSON decodes r's body into v, refusing unknown fields, trailing data and large bodies.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad request body: %w", err)
	}
	if dec.More() {
		return errors.New("bad request body: more than one JSON value")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a caller gone away is no concern of the fake's
}

// HTTPProvider is a client of a provider served by ProviderHandler, with the calls of
// *Provider. Its errors are classified as the in-process provider's are: a *StatusError when
// the provider answered without applying anything (with RetryAfter from the header),
// ErrNotSent when the request never reached it, ErrTimeout when the request was sent and no
// answer came — the payment may have been made. It sets no timeout of its own: ctx (the
// item's lease) bounds every call. Its methods are safe for concurrent use.
type HTTPProvider struct {
	base   *url.URL
	client *http.Client
}

// NewHTTPProvider returns a client of the provider served at baseURL (http or https), such as
// "http://127.0.0.1:8099".
func NewHTTPProvider(baseURL string) (*HTTPProvider, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &bt.Error{Code: bt.CodeInvalidInput, Field: "baseURL",
			Message: fmt.Sprintf("provider URL must be http(s)://host[:port], not %q", baseURL), Err: err}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // a run pays up to its parallelism at once; keep those connections
	// Through tracing.Transport: a call within a run's item carries its trace to the provider,
	// as a job's own calls should, and has its client span ("HTTP POST").
	return &HTTPProvider{base: u, client: &http.Client{Transport: tracing.Transport(tr)}}, nil
}

// URL returns the provider's base URL.
func (c *HTTPProvider) URL() string { return c.base.String() }

// Apply makes the payment through the provider (Provider.Apply).
func (c *HTTPProvider) Apply(ctx context.Context, pay Payment) (Effect, error) {
	var out applyResponse
	err := c.call(ctx, http.MethodPost, "/apply", applyRequest{IdempotencyKey: pay.IdempotencyKey, Target: pay.Target, Amount: pay.Amount}, &out)
	if err != nil {
		return Effect{}, err
	}
	return Effect{ID: out.ID, AppliedAt: out.AppliedAt, Replayed: out.Replayed}, nil
}

// Lookup reports the effect applied for idempotencyKey, if any (Provider.Lookup).
func (c *HTTPProvider) Lookup(ctx context.Context, idempotencyKey string) (effectID int64, found bool, err error) {
	var out lookupResponse
	if err := c.call(ctx, http.MethodGet, "/lookup?key="+url.QueryEscape(idempotencyKey), nil, &out); err != nil {
		return 0, false, fmt.Errorf("provider: look up %s: %w", idempotencyKey, err)
	}
	return out.ID, out.Found, nil
}

// SetLimit sets the provider's own limit (Provider.SetLimit); bad input comes back as the
// provider's INVALID_INPUT *batontype.Error with its field.
func (c *HTTPProvider) SetLimit(ctx context.Context, lim ProviderLimit) error {
	return c.call(ctx, http.MethodPut, "/limit", lim, nil)
}

// Limit returns the provider's own limit in force.
func (c *HTTPProvider) Limit(ctx context.Context) (ProviderLimit, error) {
	var out ProviderLimit
	return out, c.call(ctx, http.MethodGet, "/limit", nil, &out)
}

// Records returns what the provider saw of its callers (Provider.Records).
func (c *HTTPProvider) Records(ctx context.Context) (LimitRecord, error) {
	var out LimitRecord
	return out, c.call(ctx, http.MethodGet, "/records", nil, &out)
}

// ResetRecords resets the provider's records (Provider.ResetRecords).
func (c *HTTPProvider) ResetRecords(ctx context.Context) error {
	return c.call(ctx, http.MethodDelete, "/records", nil, nil)
}

// Stats returns what the provider has done so far (Provider.Stats).
func (c *HTTPProvider) Stats(ctx context.Context) (ProviderStats, error) {
	var out ProviderStats
	return out, c.call(ctx, http.MethodGet, "/stats", nil, &out)
}

// call sends in (when not nil) as JSON and decodes a 2xx answer into out (when not nil). It
// tells a request that never went out (ErrNotSent) from one sent and left unanswered
// (ErrTimeout), and turns an error answer into the provider's error (answerError).
func (c *HTTPProvider) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("provider: encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	var sent atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			sent.Store(true)
		}
	}})
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+path, body)
	if err != nil {
		return fmt.Errorf("provider: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if !sent.Load() {
			return fmt.Errorf("%w: %s %s: %w", ErrNotSent, method, path, err)
		}
		return fmt.Errorf("%w: %s %s: %w", ErrTimeout, method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return answerError(resp)
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<28)).Decode(out); err != nil {
		// The provider answered success and its body was lost: as good as no answer.
		return fmt.Errorf("%w: %s %s: read the answer: %w", ErrTimeout, method, path, err)
	}
	return nil
}

// answerError turns an error answer into what the in-process provider would have returned.
// Any 4xx, and a 429 or 503, means nothing was applied (a *StatusError); a 504 or a lost
// answer may hide a payment made (ErrTimeout); any other 5xx is unknown and left unclassified.
func answerError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxRequestBody))
	var eb errorBody
	if json.Unmarshal(raw, &eb) != nil || eb.Error == "" {
		eb = errorBody{Error: strings.TrimSpace(string(raw))}
	}
	code := resp.StatusCode
	switch {
	case eb.Code != "":
		return &bt.Error{Code: bt.Code(eb.Code), Field: eb.Field, Message: "provider: " + eb.Error}
	case eb.Kind == kindNotSent:
		return fmt.Errorf("%w: %s", ErrNotSent, eb.Error)
	case eb.Kind == kindTimeout || code == http.StatusGatewayTimeout:
		return fmt.Errorf("%w: %s", ErrTimeout, eb.Error)
	case eb.Kind == kindStatus || code < 500 || code == http.StatusServiceUnavailable:
		return &StatusError{Code: code, Message: eb.Error, RetryAfter: runner.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	return fmt.Errorf("provider: answered %d %s: %s", code, http.StatusText(code), eb.Error)
}
