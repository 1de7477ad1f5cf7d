package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/graph"
	"github.com/baton-run/baton/graph/model"
	"github.com/baton-run/baton/internal/testbundle"
	"github.com/baton-run/baton/internal/testenv"
	"github.com/baton-run/baton/server/httpapi"
)

// endpoint is a GraphQL endpoint on an httptest server, on a runner that does not run.
type endpoint struct {
	url      string
	operator string // a token of the OPERATOR role
	viewer   string // a token of the VIEWER role
}

func newEndpoint(t *testing.T, configure func(*httpapi.Config)) *endpoint {
	t.Helper()
	b := testbundle.Setup(t, testenv.Schema)
	r := b.NewRunner(b.Config())
	tokens := httpapi.NewTokenStore(b.Pool)
	cfg := httpapi.Config{Tokens: tokens, GraphQL: graph.Config{Runner: r}}
	if configure != nil {
		configure(&cfg)
	}
	srv := httptest.NewServer(httpapi.NewHandler(cfg))
	t.Cleanup(srv.Close)
	e := &endpoint{url: srv.URL + "/graphql"}
	for role, tok := range map[model.Role]*string{model.RoleOperator: &e.operator, model.RoleViewer: &e.viewer} {
		var err error
		if *tok, _, err = httpapi.CreateToken(context.Background(), tokens, "test-"+strings.ToLower(string(role)), role); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// answer is an HTTP answer of the endpoint, its body decoded as a GraphQL response.
type answer struct {
	status  int
	header  http.Header
	raw     string
	hasData bool // whether the body has a data entry (null counts)
	data    json.RawMessage
	errors  []struct {
		Message    string
		Extensions map[string]any
	}
}

func (a *answer) code() string {
	if len(a.errors) == 0 {
		return ""
	}
	c, _ := a.errors[0].Extensions["code"].(string)
	return c
}

// mediaType is the answer's media type, and whether it says its charset is UTF-8.
func (a *answer) mediaType() (string, bool) {
	mt, params, _ := mime.ParseMediaType(a.header.Get("Content-Type"))
	return mt, params["charset"] == "utf-8"
}

// send makes one request: header holds the headers besides the token (none when "").
func (e *endpoint) send(t *testing.T, method, rawURL, token, body string, header map[string]string) *answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, rawURL, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return decodeAnswer(t, res.StatusCode, res.Header, raw)
}

func decodeAnswer(t *testing.T, status int, header http.Header, raw []byte) *answer {
	t.Helper()
	a := &answer{status: status, header: header, raw: string(raw)}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatalf("HTTP %d: the body is not a GraphQL response: %v: %q", status, err, raw)
	}
	a.data, a.hasData = entries["data"]
	if e, ok := entries["errors"]; ok {
		if err := json.Unmarshal(e, &a.errors); err != nil {
			t.Fatalf("HTTP %d: errors %s: %v", status, e, err)
		}
	}
	return a
}

// post sends a POST of body as application/json with accept ("" : no Accept header).
func (e *endpoint) post(t *testing.T, token, accept, body string) *answer {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if accept != "" {
		h["Accept"] = accept
	}
	return e.send(t, http.MethodPost, e.url, token, body, h)
}

// get sends a GET with the parameters params and accept.
func (e *endpoint) get(t *testing.T, token, accept string, params url.Values) *answer {
	t.Helper()
	h := map[string]string{}
	if accept != "" {
		h["Accept"] = accept
	}
	return e.send(t, http.MethodGet, e.url+"?"+params.Encode(), token, "", h)
}

func query(q string) string {
	b, _ := json.Marshal(map[string]string{"query": q})
	return string(b)
}

const (
	gqlResponse = "application/graphql-response+json"
	appJSON     = "application/json"
)

// The status, media type and shape of every kind of answer, in both media types: an executed
// operation is 200 with data; a request refused before execution has no data entry and is
// 200 in application/json, a 4xx in application/graphql-response+json; a request that is not
// well formed is 400 in both.
func TestGraphQLOverHTTPStatuses(t *testing.T) {
	e := newEndpoint(t, nil)
	for _, c := range []struct {
		name    string
		token   string // "" : the operator's
		body    string
		code    string // of the first error; "" : none
		data    bool   // a data entry
		gqlResp int    // the status in application/graphql-response+json
		json    int    // in application/json
	}{
		{name: "a query", body: query(`{ me { name role } }`), data: true, gqlResp: 200, json: 200},
		{name: "a field error", body: query(`{ me { name } node(id: "bm9wZQ==") { id } }`), code: "*", data: true, gqlResp: 200, json: 200},
		{name: "a document that does not parse", body: query(`{`), code: "GRAPHQL_PARSE_FAILED", gqlResp: 400, json: 200},
		{name: "an empty document", body: query(``), code: "GRAPHQL_VALIDATION_FAILED", gqlResp: 400, json: 200},
		{name: "a document that does not validate", body: query(`{ noSuchField }`), code: "GRAPHQL_VALIDATION_FAILED", gqlResp: 400, json: 200},
		{name: "an unknown operation", body: `{"query": "query A { me { name } }", "operationName": "B"}`, code: "GRAPHQL_VALIDATION_FAILED", gqlResp: 400, json: 200},
		{name: "variables that do not coerce", body: `{"query": "query($n: String!) { job(name: $n) { name } }", "variables": {"n": null}}`, code: "GRAPHQL_VALIDATION_FAILED", gqlResp: 400, json: 200},
		{name: "too deep", body: query(`{ job(name: "h") ` + strings.Repeat(`{ lastRun { job `, 6) + `{ name }` + strings.Repeat(` } }`, 6) + ` }`), code: graph.CodeDepthLimit, gqlResp: 400, json: 200},
		{name: "too complex", body: query(`{ jobs { nodes { runs(first: 100) { nodes { errors(first: 100) { nodes { message } } } } } } }`), code: "COMPLEXITY_LIMIT_EXCEEDED", gqlResp: 400, json: 200},
		{name: "an input over its limit", body: query(`mutation { pauseJob(input: {name: "` + strings.Repeat("x", graph.MaxIDLength+1) + `"}) { userErrors { code } } }`), code: graph.CodeInputTooLong, gqlResp: 400, json: 200},
		{name: "introspection by a viewer", token: e.viewer, body: query(`{ __schema { queryType { name } } }`), code: graph.CodeForbidden, gqlResp: 403, json: 200},
		{name: "a subscription over HTTP", body: query(`subscription { alertRaised { id } }`), code: graph.CodeBadRequest, gqlResp: 400, json: 200},
		{name: "JSON that does not parse", body: `{"query": `, code: graph.CodeBadRequest, gqlResp: 400, json: 400},
		{name: "no query", body: `{"qeury": "{ me { name } }"}`, code: graph.CodeBadRequest, gqlResp: 400, json: 400},
		{name: "variables of the wrong type", body: `{"query": "{ me { name } }", "variables": [7]}`, code: graph.CodeBadRequest, gqlResp: 400, json: 400},
		{name: "a batch", body: `[{"query": "{ me { name } }"}]`, code: graph.CodeBadRequest, gqlResp: 400, json: 400},
		{name: "no body", body: ``, code: graph.CodeBadRequest, gqlResp: 400, json: 400},
		{name: "no token", token: "-", body: query(`{ me { name } }`), code: graph.CodeUnauthenticated, gqlResp: 401, json: 401},
	} {
		token := c.token
		switch token {
		case "":
			token = e.operator
		case "-":
			token = ""
		}
		for _, m := range []struct{ accept, want string }{
			{gqlResponse, gqlResponse},
			{"application/graphql-response+json, application/json;q=0.9", gqlResponse},
			{appJSON, appJSON},
			{"*/*", appJSON},
			{"", appJSON},
		} {
			t.Run(c.name+", Accept "+m.accept, func(t *testing.T) {
				a := e.post(t, token, m.accept, c.body)
				status := c.json
				if m.want == gqlResponse {
					status = c.gqlResp
				}
				mt, utf8 := a.mediaType()
				if a.status != status || mt != m.want || !utf8 || !strings.Contains(a.header.Get("Vary"), "Accept") {
					t.Errorf("HTTP %d, Content-Type %q, Vary %q; want %d, %s; charset=utf-8, Vary: Accept: %s",
						a.status, a.header.Get("Content-Type"), a.header.Values("Vary"), status, m.want, a.raw)
				}
				if a.hasData != c.data {
					t.Errorf("data entry %v, want %v: %s", a.hasData, c.data, a.raw)
				}
				switch {
				case c.code == "" && len(a.errors) > 0:
					t.Errorf("errors: %s", a.raw)
				case c.code == "*" && a.code() == "":
					t.Errorf("a field error without a code: %s", a.raw)
				case c.code != "" && c.code != "*" && a.code() != c.code:
					t.Errorf("code %q, want %s: %s", a.code(), c.code, a.raw)
				}
				for _, e := range a.errors {
					if e.Extensions["code"] == nil || e.Message == "" {
						t.Errorf("an error without a code or a message: %s", a.raw)
					}
				}
			})
		}
	}
}

// The headers a request is refused for before anything runs: an Accept header allowing
// neither media type (406), a POST that is not application/json in UTF-8 (415), a method
// other than GET and POST (405), and mutations over GET (405, Allow: POST). None of them
// changes anything, even with a mutation that would.
func TestGraphQLOverHTTPRefusals(t *testing.T) {
	e := newEndpoint(t, func(c *httpapi.Config) { c.MaxBodyBytes = 2048 })
	pause := `mutation { setMaintenance(input: {paused: true}) { maintenance } }`
	maintenance := func(t *testing.T) bool {
		t.Helper()
		a := e.post(t, e.operator, gqlResponse, query(`{ maintenance }`))
		var d struct{ Maintenance bool }
		if a.status != http.StatusOK || json.Unmarshal(a.data, &d) != nil {
			t.Fatalf("{ maintenance }: HTTP %d %s", a.status, a.raw)
		}
		return d.Maintenance
	}
	refused := func(t *testing.T, a *answer, status int, code, media, msg string) {
		t.Helper()
		mt, utf8 := a.mediaType()
		if a.status != status || a.code() != code || len(a.errors) != 1 || a.hasData || mt != media || !utf8 ||
			!strings.Contains(a.errors[0].Message, msg) {
			t.Errorf("HTTP %d, Content-Type %q: %s; want %d, %s; charset=utf-8, one error coded %s saying %q, no data",
				a.status, a.header.Get("Content-Type"), a.raw, status, media, code, msg)
		}
	}

	for _, accept := range []string{"text/html", "application/graphql+json", "application/json;q=0, application/graphql-response+json;q=0", "application/json; charset=iso-8859-1"} {
		t.Run("Accept "+accept, func(t *testing.T) {
			a := e.send(t, http.MethodPost, e.url, e.operator, query(pause), map[string]string{"Content-Type": appJSON, "Accept": accept})
			refused(t, a, http.StatusNotAcceptable, graph.CodeBadRequest, appJSON, "allows neither application/graphql-response+json nor application/json")
		})
	}
	for _, ct := range []string{"", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=b", "application/graphql", "application/json; charset=latin1"} {
		t.Run("Content-Type "+ct, func(t *testing.T) {
			h := map[string]string{"Accept": gqlResponse}
			if ct != "" {
				h["Content-Type"] = ct
			}
			a := e.send(t, http.MethodPost, e.url, e.operator, query(pause), h)
			refused(t, a, http.StatusUnsupportedMediaType, graph.CodeBadRequest, gqlResponse, "")
		})
	}
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead} {
		t.Run(method, func(t *testing.T) {
			req, _ := http.NewRequest(method, e.url, strings.NewReader(query(pause)))
			req.Header.Set("Content-Type", appJSON)
			req.Header.Set("Authorization", "Bearer "+e.operator)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, POST" {
				t.Errorf("HTTP %d, Allow %q; want 405, GET, POST", res.StatusCode, res.Header.Get("Allow"))
			}
		})
	}
	t.Run("mutations over GET", func(t *testing.T) {
		for _, p := range []url.Values{
			{"query": {pause}},
			{"query": {`mutation M { setMaintenance(input: {paused: true}) { maintenance } } query Q { maintenance }`}, "operationName": {"M"}},
			// Refused as a mutation even when its variables would not coerce.
			{"query": {`mutation($p: Boolean!) { setMaintenance(input: {paused: $p}) { maintenance } }`}, "variables": {`{"p": "yes"}`}},
		} {
			for _, accept := range []string{gqlResponse, appJSON, ""} {
				a := e.get(t, e.operator, accept, p)
				want := appJSON
				if accept == gqlResponse {
					want = gqlResponse
				}
				refused(t, a, http.StatusMethodNotAllowed, graph.CodeBadRequest, want, "mutations need a POST")
				if a.header.Get("Allow") != http.MethodPost {
					t.Errorf("a GET mutation: Allow %q, want POST", a.header.Get("Allow"))
				}
			}
		}
		// The query of a document that also holds a mutation runs.
		a := e.get(t, e.operator, gqlResponse, url.Values{"query": {`mutation M { setMaintenance(input: {paused: true}) { maintenance } } query Q { maintenance }`}, "operationName": {"Q"}})
		if a.status != http.StatusOK || a.code() != "" || string(a.data) != `{"maintenance":false}` {
			t.Errorf("GET of query Q: HTTP %d %s", a.status, a.raw)
		}
	})
	t.Run("GET", func(t *testing.T) {
		a := e.get(t, e.operator, "", url.Values{"query": {`query($n: String!) { job(name: $n) { name } }`}, "variables": {`{"n": "nope"}`}})
		if mt, _ := a.mediaType(); a.status != http.StatusOK || a.code() != "" || mt != appJSON || string(a.data) != `{"job":null}` {
			t.Errorf("GET query: HTTP %d %s", a.status, a.raw)
		}
		refused(t, e.get(t, e.operator, gqlResponse, url.Values{"operationName": {"Q"}}), http.StatusBadRequest, graph.CodeBadRequest, gqlResponse, "no query")
		refused(t, e.get(t, e.operator, gqlResponse, url.Values{"query": {`{ maintenance }`}, "variables": {`[1]`}}), http.StatusBadRequest, graph.CodeBadRequest, gqlResponse, "variables must be a JSON object")
		refused(t, e.get(t, e.operator, gqlResponse, url.Values{"query": {`subscription { alertRaised { id } }`}}), http.StatusBadRequest, graph.CodeBadRequest, gqlResponse, "WebSocket only")
		refused(t, e.get(t, e.operator, gqlResponse, url.Values{"query": {strings.Repeat("{ maintenance }", 200)}}), http.StatusRequestURITooLong, graph.CodePayloadTooLarge, gqlResponse, "send the request as a POST")
	})
	t.Run("cross-origin", func(t *testing.T) {
		h := map[string]string{"Content-Type": appJSON, "Accept": gqlResponse, "Origin": "https://evil.example"}
		refused(t, e.send(t, http.MethodPost, e.url, e.operator, query(pause), h), http.StatusForbidden, graph.CodeForbidden, gqlResponse, "origin https://evil.example is not allowed")
		delete(h, "Origin") // a cross-site browser request without Origin: Sec-Fetch-Site tells
		h["Sec-Fetch-Site"] = "cross-site"
		refused(t, e.send(t, http.MethodPost, e.url, e.operator, query(pause), h), http.StatusForbidden, graph.CodeForbidden, gqlResponse, "cross-origin requests are not allowed")
	})
	t.Run("sizes", func(t *testing.T) {
		refused(t, e.post(t, e.operator, gqlResponse, query(`{ maintenance }`+strings.Repeat(" ", 4096))), http.StatusRequestEntityTooLarge, graph.CodePayloadTooLarge, gqlResponse, "larger than 2048 bytes")
	})
	t.Run("an upgrade that is not a WebSocket", func(t *testing.T) {
		// curl --http2 asks for h2c: the request is served as HTTP, a token required (a
		// WebSocket upgrade may come without one: it authenticates in connection_init).
		h := map[string]string{"Upgrade": "h2c", "Connection": "Upgrade, HTTP2-Settings", "HTTP2-Settings": "AAMAAABkAAQAoAAAAAIAAAAA"}
		u := e.url + "?query=" + url.QueryEscape(`{ maintenance }`)
		if a := e.send(t, http.MethodGet, u, "", "", h); a.status != http.StatusUnauthorized || a.code() != graph.CodeUnauthenticated || a.hasData {
			t.Errorf("without a token: HTTP %d: %s", a.status, a.raw)
		}
		if a := e.send(t, http.MethodGet, u, e.operator, "", h); a.status != http.StatusOK || string(a.data) != `{"maintenance":false}` {
			t.Errorf("with a token: HTTP %d: %s", a.status, a.raw)
		}
		h["Upgrade"] = "websocket" // without Connection: Upgrade, not an upgrade either
		h["Connection"] = "keep-alive"
		if a := e.send(t, http.MethodGet, u, "", "", h); a.status != http.StatusUnauthorized || a.code() != graph.CodeUnauthenticated || a.hasData {
			t.Errorf("Upgrade: websocket without Connection: Upgrade, no token: HTTP %d: %s", a.status, a.raw)
		}
	})
	if maintenance(t) {
		t.Fatal("a refused request turned maintenance on")
	}
	// The mutation the refusals carried does work: they could have changed something.
	if a := e.post(t, e.operator, gqlResponse, query(pause)); a.status != http.StatusOK || a.code() != "" {
		t.Fatalf("POST mutation: HTTP %d %s", a.status, a.raw)
	}
	if !maintenance(t) {
		t.Fatal("setMaintenance over POST did not turn maintenance on")
	}
}

// Without a token, a POST and a GET are refused with 401, UNAUTHENTICATED, a Bearer challenge
// and the media type the client accepts; so is an unknown token and a malformed header.
func TestGraphQLOverHTTPUnauthenticated(t *testing.T) {
	e := newEndpoint(t, nil)
	for _, c := range []struct{ name, authorization, accept, want string }{
		{"no token", "", gqlResponse, gqlResponse},
		{"no token, application/json", "", appJSON, appJSON},
		{"no token, no Accept", "", "", appJSON},
		{"an unknown token", "Bearer bt_" + strings.Repeat("A", 43), gqlResponse, gqlResponse},
		{"not a bearer token", "Basic dXNlcjpwYXNz", "*/*", appJSON},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": appJSON}
			if c.accept != "" {
				h["Accept"] = c.accept
			}
			if c.authorization != "" {
				h["Authorization"] = c.authorization
			}
			for _, a := range []*answer{
				e.send(t, http.MethodPost, e.url, "", query(`{ me { name } }`), h),
				e.send(t, http.MethodGet, e.url+"?query="+url.QueryEscape(`{ me { name } }`), "", "", h),
			} {
				mt, utf8 := a.mediaType()
				if a.status != http.StatusUnauthorized || a.code() != graph.CodeUnauthenticated || a.hasData || mt != c.want || !utf8 ||
					!strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("HTTP %d, Content-Type %q, WWW-Authenticate %q: %s; want 401 UNAUTHENTICATED in %s without data",
						a.status, a.header.Get("Content-Type"), a.header.Get("WWW-Authenticate"), a.raw, c.want)
				}
			}
		})
	}
}

// A body that does not arrive within the request timeout is answered 408.
func TestGraphQLOverHTTPSlowBody(t *testing.T) {
	e := newEndpoint(t, func(c *httpapi.Config) { c.RequestTimeout = 300 * time.Millisecond })
	u, err := url.Parse(e.url)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Ten bytes of a hundred, then nothing: the server gives up on the rest.
	fmt.Fprintf(conn, "POST /graphql HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\n"+
		"Authorization: Bearer %s\r\nContent-Length: 100\r\n\r\n{\"query\": ", u.Host, gqlResponse, e.operator)
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute)) // a bound on a broken server, not a wait
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	a := decodeAnswer(t, res.StatusCode, res.Header, raw)
	if a.status != http.StatusRequestTimeout || a.code() != graph.CodeBadRequest || a.hasData {
		t.Errorf("HTTP %d: %s; want 408 BAD_REQUEST", a.status, a.raw)
	}
}
