package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/runner"
)

// GraphQL over HTTP (graphql.github.io/graphql-over-http), as graphql-http's audit suite
// checks it (e2e/api/audit.mjs): the media types a response is served in, how a request is
// read, and which HTTP status answers what.
//
//   - The response is application/graphql-response+json or application/json, whichever the
//     Accept header ranks first; application/json when it accepts both alike (*/*,
//     application/*) or when there is no Accept header, as legacy clients expect. An Accept
//     header that allows neither is refused with 406.
//   - A POST must be Content-Type application/json (UTF-8, the default): anything else,
//     or none, is refused with 415. Its body is one JSON object: {query} a string,
//     {operationName} a string, {variables} and {extensions} objects, each optional one may
//     be null; other properties are ignored.
//   - A GET carries the same parameters in the URL, {variables} and {extensions} as JSON
//     text; it serves queries only: a mutation is refused with 405 and Allow: POST.
//   - A request that is not well formed (not JSON, no query, a parameter of the wrong type)
//     is refused with 400, BAD_REQUEST, whatever the media type.
//   - A request refused before execution — a document that does not parse or validate,
//     variables that do not coerce, Baton's own limits (depth, complexity, mutation count,
//     input length, introspection by a viewer), a subscription over HTTP — is answered
//     without a data entry: with 200 in application/json, where any other status could be
//     an intermediary's, and with a 4xx in application/graphql-response+json (400; 401 or
//     403 for UNAUTHENTICATED or FORBIDDEN; 500 for an internal error).
//   - An executed operation is answered 200 with its data, even when fields failed.
//
// The errors the endpoint raises itself (token, origin, size, method, media types) are
// GraphQL responses too, with a code, in the negotiated media type.

// The media types of GraphQL responses over HTTP.
const (
	mediaTypeJSON            = "application/json"
	mediaTypeGraphQLResponse = "application/graphql-response+json"
)

// negotiateMediaType returns the media type to answer in for an Accept header: of
// application/graphql-response+json and application/json, the one the header gives the
// higher quality, then the one it names first; application/json when the same wildcard
// accepts both or when there is no header. It returns false when the header accepts neither.
func negotiateMediaType(accept string) (string, bool) {
	if strings.TrimSpace(accept) == "" {
		return mediaTypeJSON, true
	}
	// For each type of ours, the most specific range of the header that matches it decides
	// its quality (RFC 9110, 12.5.1): "application/json;q=0, */*" refuses application/json.
	type match struct {
		q           float64
		specificity int // 2: the type itself, 1: application/*, 0: */*
		pos         int
	}
	ours := [2]string{mediaTypeGraphQLResponse, mediaTypeJSON}
	var best [2]*match
	for pos, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
				continue
			}
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			continue // Baton answers in UTF-8 only
		}
		for i, t := range ours {
			s := -1
			switch mt {
			case t:
				s = 2
			case "application/*":
				s = 1
			case "*/*":
				s = 0
			}
			if s >= 0 && (best[i] == nil || s > best[i].specificity) {
				best[i] = &match{q: q, specificity: s, pos: pos}
			}
		}
	}
	choice := -1
	for i := range ours {
		m := best[i]
		if m == nil || m.q <= 0 {
			continue
		}
		if choice < 0 {
			choice = i
			continue
		}
		c := best[choice]
		// Ties go to the range named first; a wildcard naming both goes to application/json
		// (i == 1), the media type every client has always read.
		if m.q > c.q || (m.q == c.q && m.pos <= c.pos) {
			choice = i
		}
	}
	if choice < 0 {
		return "", false
	}
	return ours[choice], true
}

// responseMediaType is the media type to answer r in: the negotiated one, or application/json
// for a request whose Accept header allows neither (its 406 has to be written in something).
func responseMediaType(r *http.Request) string {
	if mt, ok := negotiateMediaType(r.Header.Get("Accept")); ok {
		return mt
	}
	return mediaTypeJSON
}

// checkRequestContentType returns why a POST's Content-Type is refused, or "" when it is
// application/json in UTF-8.
func checkRequestContentType(contentType string) string {
	if contentType == "" {
		return "a POST needs the header Content-Type: application/json"
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return fmt.Sprintf("Content-Type %q is not a media type: send application/json", contentType)
	}
	if mt != mediaTypeJSON {
		return fmt.Sprintf("Content-Type %s is not supported: send the request as application/json", mt)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Sprintf("charset %s is not supported: send the request in UTF-8", cs)
	}
	return ""
}

// postParams reads the parameters of a POST from its JSON body.
func postParams(body []byte) (*graphql.RawParams, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New(`the request body is empty: send a JSON object {"query": "…"}`)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		var notObject *json.UnmarshalTypeError
		if errors.As(err, &notObject) && notObject.Field == "" {
			return nil, fmt.Errorf("the request body must be a JSON object, not %s (batches are not supported)", notObject.Value)
		}
		return nil, fmt.Errorf("the request body is not valid JSON: %v", err)
	}
	if fields == nil {
		return nil, errors.New("the request body must be a JSON object, not null")
	}
	p := &graphql.RawParams{}
	if q := fields["query"]; q == nil || string(q) == "null" {
		// An empty string is a query: a document that does not parse, which the executor reports.
		return nil, errors.New(`the request has no query: send {"query": "…"}`)
	}
	if err := jsonString(fields["query"], "query", &p.Query); err != nil {
		return nil, err
	}
	if err := jsonString(fields["operationName"], "operationName", &p.OperationName); err != nil {
		return nil, err
	}
	var err error
	if p.Variables, err = jsonObject(fields["variables"], "variables"); err != nil {
		return nil, err
	}
	if p.Extensions, err = jsonObject(fields["extensions"], "extensions"); err != nil {
		return nil, err
	}
	return p, nil
}

// getParams reads the parameters of a GET from its query string; an empty parameter is an
// absent one.
func getParams(rawQuery string) (*graphql.RawParams, error) {
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, fmt.Errorf("the query string is not valid: %v", err)
	}
	if !values.Has("query") {
		return nil, errors.New("the request has no query: send ?query=…")
	}
	p := &graphql.RawParams{Query: values.Get("query"), OperationName: values.Get("operationName")}
	if v := values.Get("variables"); v != "" {
		if p.Variables, err = jsonObject(json.RawMessage(v), "variables"); err != nil {
			return nil, err
		}
	}
	if v := values.Get("extensions"); v != "" {
		if p.Extensions, err = jsonObject(json.RawMessage(v), "extensions"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// jsonString decodes parameter name, a string, into out; absent or null leaves out alone.
func jsonString(raw json.RawMessage, name string, out *string) error {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s must be a string, not %s", name, jsonKind(raw))
	}
	return nil
}

// jsonObject decodes parameter name, an object, keeping numbers as json.Number (as gqlgen
// expects of variables, so that large integers survive); absent or null is nil.
func jsonObject(raw json.RawMessage, name string) (map[string]any, error) {
	if raw == nil || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%s is not valid JSON", name)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s must be a JSON object, not %s", name, jsonKind(raw))
	}
	return m, nil
}

// jsonKind names the kind of a valid JSON value other than null, for an error message.
func jsonKind(raw json.RawMessage) string {
	switch bytes.TrimSpace(raw)[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// graphQLOverHTTP is gqlgen's transport for GraphQL over HTTP: POST with a JSON body and GET
// with the parameters in the URL. serveGraphQL has checked the method, the Accept and
// Content-Type headers, the size and the token when it runs; it reads the parameters, keeps
// mutations off GET and subscriptions off HTTP, and answers with the status and media type
// the protocol asks for (see the top of this file).
type graphQLOverHTTP struct {
	// maxTokens bounds the parse that finds a GET's operation type, as the executor's own.
	maxTokens int
	log       *slog.Logger
}

var _ graphql.Transport = graphQLOverHTTP{}

// Supports takes every GET and POST that does not ask for an upgrade. An upgrade request is the
// WebSocket transport's even when it is not a WebSocket: it may come without a token (its
// clients authenticate in connection_init), so it must never be run as a query.
func (graphQLOverHTTP) Supports(r *http.Request) bool {
	return r.Header.Get("Upgrade") == "" && (r.Method == http.MethodGet || r.Method == http.MethodPost)
}

// Do serves one request.
func (t graphQLOverHTTP) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	media := responseMediaType(r)
	start := graphql.Now()
	var params *graphql.RawParams
	var err error
	if r.Method == http.MethodGet {
		params, err = getParams(r.URL.RawQuery)
	} else {
		var body []byte
		if body, err = io.ReadAll(r.Body); err == nil {
			params, err = postParams(body)
		}
	}
	if err != nil {
		t.write(w, media, http.StatusBadRequest, errorBody(graph.CodeBadRequest, err.Error()))
		return
	}
	if r.Method == http.MethodGet && t.isMutation(params) {
		// GET is safe: it must not change anything, even when a mutation would be refused anyway.
		w.Header().Set("Allow", http.MethodPost)
		t.write(w, media, http.StatusMethodNotAllowed, errorBody(graph.CodeBadRequest, "mutations need a POST: GET runs queries only"))
		return
	}
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}

	ctx := r.Context()
	opCtx, errs := exec.CreateOperationContext(ctx, params)
	if errs == nil && opCtx.Operation.Operation == ast.Subscription {
		errs = gqlerror.List{{Message: "subscriptions are served over WebSocket only", Extensions: map[string]any{"code": graph.CodeBadRequest}}}
	}
	if errs != nil {
		// Refused before execution: a GraphQL request error, whose response has no data entry.
		res := exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)
		t.write(w, media, requestErrorStatus(media, res.Errors), &requestErrorResponse{Errors: res.Errors, Extensions: res.Extensions})
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	t.write(w, media, http.StatusOK, responses(ctx))
}

// isMutation reports whether the parameters of a GET select a mutation. It parses the
// document before the executor validates it, so that a GET mutation is refused as such even
// when it would not validate or its variables would not coerce.
func (t graphQLOverHTTP) isMutation(p *graphql.RawParams) bool {
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: p.Query}, t.maxTokens)
	if err != nil {
		return false // the executor reports the parse error
	}
	op := doc.Operations.ForName(p.OperationName)
	return op != nil && op.Operation == ast.Mutation
}

// requestErrorStatus is the status of a response that refused a request before execution.
// In application/json it is 200: a client cannot tell any other status from an
// intermediary's, and takes only a 200 as a GraphQL response. In
// application/graphql-response+json it says what went wrong: 400 for a request that does not
// parse, validate or pass the limits, 401 or 403 for the caller, 500 for the server.
func requestErrorStatus(media string, errs gqlerror.List) int {
	if media == mediaTypeJSON {
		return http.StatusOK
	}
	status := http.StatusBadRequest
	for _, e := range errs {
		switch code, _ := e.Extensions["code"].(string); code {
		case graph.CodeInternal:
			return http.StatusInternalServerError
		case graph.CodeUnauthenticated:
			if status == http.StatusBadRequest {
				status = http.StatusUnauthorized
			}
		case graph.CodeForbidden:
			if status == http.StatusBadRequest {
				status = http.StatusForbidden
			}
		}
	}
	return status
}

// requestErrorResponse is a GraphQL response to a request refused before execution: errors
// and no data entry (graphql.Response always has one).
type requestErrorResponse struct {
	Errors     gqlerror.List  `json:"errors"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// errorBody is the response of one error with code.
func errorBody(code, message string) *requestErrorResponse {
	return &requestErrorResponse{Errors: gqlerror.List{{Message: message, Extensions: map[string]any{"code": code}}}}
}

// write answers with status and the JSON of v in media, UTF-8.
func (t graphQLOverHTTP) write(w http.ResponseWriter, media string, status int, v any) {
	writeJSON(w, t.log, media, status, v)
}

// writeJSON answers with status and the JSON of v in media, UTF-8. The answer depends on the
// Accept header: caches are told so.
func writeJSON(w http.ResponseWriter, log *slog.Logger, media string, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		ref := runner.NewErrorRef()
		log.Error("httpapi: encode a response", "ref", ref, "err", err)
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody(graph.CodeInternal, runner.InternalMessage(ref)))
	}
	h := w.Header()
	h.Set("Content-Type", media+"; charset=utf-8")
	h.Add("Vary", "Accept")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
