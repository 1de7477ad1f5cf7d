package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNegotiateMediaType(t *testing.T) {
	t.Parallel()
	const gql, js = mediaTypeGraphQLResponse, mediaTypeJSON
	for _, c := range []struct {
		accept string
		want   string // "" : not acceptable
	}{
		{"", js}, // no header: legacy clients
		{"   ", js},
		{"*/*", js}, // a wildcard accepts both alike: the one every client reads
		{"application/*", js},
		{"application/json", js},
		{"application/graphql-response+json", gql},
		{"Application/GraphQL-Response+JSON", gql},
		{"application/graphql-response+json; charset=utf-8", gql},
		{"application/graphql-response+json; charset=UTF-8, application/json; charset=utf-8", gql},
		{"application/graphql-response+json, application/json;q=0.9", gql}, // the spec's advice to clients
		{"application/json, application/graphql-response+json", js},        // equal quality: the first named
		{"application/json;q=0.5, application/graphql-response+json;q=0.8", gql},
		{"application/graphql-response+json;q=0.5, */*", js}, // */* gives application/json q=1
		{"*/*;q=0.1, application/graphql-response+json", gql},
		{"application/json;q=0, */*", gql}, // the exact range refuses json, the wildcard takes the other
		{"application/graphql-response+json;q=0, application/json;q=0", ""},
		{"*/*;q=0", ""},
		{"text/html", ""},
		{"text/html, application/xhtml+xml, application/xml;q=0.9, */*;q=0.8", js}, // a browser
		{"application/graphql+json", ""},                                           // the draft's old name: not served
		{"application/json; charset=iso-8859-1", ""},                               // UTF-8 only
		{"application/json; charset=iso-8859-1, application/graphql-response+json;q=0.2", gql},
		{"application/json;q=2", ""}, // a quality out of range: the range is ignored
		{"application/json;q=x, application/graphql-response+json;q=0.1", gql},
		{"garbage;;, application/json", js},
		// urql's default Accept.
		{"application/graphql-response+json, application/graphql+json, application/json, text/event-stream, multipart/mixed", gql},
	} {
		got, ok := negotiateMediaType(c.accept)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("Accept %q: %q, %v; want %q", c.accept, got, ok, c.want)
		}
	}
}

func TestCheckRequestContentType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		contentType string
		refused     string // a part of the message; "" : accepted
	}{
		{"application/json", ""},
		{"application/json; charset=utf-8", ""},
		{"Application/JSON;charset=UTF-8", ""},
		{"", "needs the header Content-Type"},
		{"text/plain;charset=UTF-8", "text/plain is not supported"}, // what fetch sends a string body as
		{"application/x-www-form-urlencoded", "is not supported"},   // a form: a CSRF vector
		{"multipart/form-data; boundary=x", "is not supported"},
		{"application/graphql", "is not supported"},
		{"application/graphql-response+json", "is not supported"}, // a response type
		{"application/json; charset=latin1", "charset latin1 is not supported"},
		{"application/json;;", "is not a media type"},
	} {
		msg := checkRequestContentType(c.contentType)
		if (c.refused == "") != (msg == "") || !strings.Contains(msg, c.refused) {
			t.Errorf("Content-Type %q: %q, want %q", c.contentType, msg, c.refused)
		}
	}
}

func TestPostParams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body    string
		refused string // a part of the message; "" : accepted
	}{
		{`{"query": "{ me { name } }"}`, ""},
		{`{"query": "query Q($a: Int) { x }", "operationName": "Q", "variables": {"a": 9007199254740993}, "extensions": {"k": [1]}}`, ""},
		{`{"query": "{ x }", "operationName": null, "variables": null, "extensions": null}`, ""},
		{`{"query": "{ x }", "unknown": 1, "Query": 2}`, ""}, // other properties are ignored
		{` {"query": ""} `, ""}, // a document that does not parse: the executor's to report
		{``, "the request body is empty"},
		{`   `, "the request body is empty"},
		{`{"query": `, "not valid JSON"},
		{`NONSENSE`, "not valid JSON"},
		{`{"query": "{ x }"} trailing`, "not valid JSON"},
		{`[{"query": "{ x }"}]`, "must be a JSON object, not array (batches are not supported)"},
		{`"{ x }"`, "must be a JSON object, not string"},
		{`null`, "must be a JSON object, not null"},
		{`{}`, "the request has no query"},
		{`{"qeury": "{ x }"}`, "the request has no query"},
		{`{"query": null}`, "the request has no query"},
		{`{"query": {"obj": "ect"}}`, "query must be a string, not an object"},
		{`{"query": 0}`, "query must be a string, not a number"},
		{`{"query": false}`, "query must be a string, not a boolean"},
		{`{"query": ["array"]}`, "query must be a string, not an array"},
		{`{"query": "{ x }", "operationName": 0}`, "operationName must be a string, not a number"},
		{`{"query": "{ x }", "variables": "string"}`, "variables must be a JSON object, not a string"},
		{`{"query": "{ x }", "variables": [7]}`, "variables must be a JSON object, not an array"},
		{`{"query": "{ x }", "extensions": true}`, "extensions must be a JSON object, not a boolean"},
		{`{"query": "{ x }", "extensions": -1}`, "extensions must be a JSON object, not a number"},
	} {
		p, err := postParams([]byte(c.body))
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("body %s: %v", c.body, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("body %s: %v, want %q", c.body, err, c.refused)
		case c.refused == "" && p == nil:
			t.Errorf("body %s: no parameters", c.body)
		}
	}
	// Numbers stay exact: 2^53+1 would not survive a float64.
	p, err := postParams([]byte(`{"query": "{ x }", "variables": {"a": 9007199254740993}}`))
	if err != nil || p.Variables["a"] != json.Number("9007199254740993") {
		t.Errorf("variables %#v, %v: want the json.Number 9007199254740993", p.Variables, err)
	}
}

func TestGetParams(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rawQuery string
		refused  string
	}{
		{"query=%7B+x+%7D", ""},
		{"query=%7B+x+%7D&operationName=&variables=&extensions=", ""}, // empty is absent
		{"query=query+Q%28%24a%3A+Int%29+%7B+x+%7D&operationName=Q&variables=%7B%22a%22%3A1%7D", ""},
		{"query=%7B+x+%7D&variables=null", ""},
		{"query=", ""}, // an empty document: the executor's to report
		{"", "the request has no query"},
		{"operationName=Q", "the request has no query"},
		{"query=%7B+x+%7D&variables=%5B7%5D", "variables must be a JSON object, not an array"},
		{"query=%7B+x+%7D&variables=%7B", "variables is not valid JSON"},
		{"query=%7B+x+%7D&variables=%7B%7D%7B%7D", "variables is not valid JSON"},
		{"query=%7B+x+%7D&variables=%22s%22", "variables must be a JSON object, not a string"},
		{"query=%7B+x+%7D&extensions=1", "extensions must be a JSON object, not a number"},
		{"query=%zz", "the query string is not valid"},
	} {
		_, err := getParams(c.rawQuery)
		if (c.refused == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.refused)) {
			t.Errorf("?%s: %v, want %q", c.rawQuery, err, c.refused)
		}
	}
}
