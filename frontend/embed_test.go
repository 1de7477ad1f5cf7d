package frontend

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

var built = fstest.MapFS{
	"index.html":               {Data: []byte(`<!doctype html><div id="root"></div><script src="/admin/assets/index-abc123.js"></script>`)},
	"favicon.svg":              {Data: []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`)},
	"placeholder.html":         {Data: []byte(`not built`)},
	"assets/index-abc123.js":   {Data: []byte(strings.Repeat("console.log('baton');\n", 200))},
	"assets/index-abc123.css":  {Data: []byte(`body{}`)},
	"assets/inter-latin.woff2": {Data: []byte{0x77, 0x4f, 0x46, 0x32}},
}

func get(t *testing.T, h http.Handler, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerRoutes(t *testing.T) {
	t.Parallel()
	h := newHandler(built)
	index := string(built["index.html"].Data)
	tests := []struct {
		name, path   string
		status       int
		body         string // substring, "" to skip
		cache, ctype string
	}{
		{"admin root", "/admin/", 200, index, "no-cache", "text/html; charset=utf-8"},
		{"admin without slash", "/admin", 200, index, "no-cache", "text/html; charset=utf-8"},
		{"spa route", "/admin/jobs/demo-collect", 200, index, "no-cache", "text/html; charset=utf-8"},
		{"deep spa route", "/admin/runs/UnVuOjE=/replay", 200, index, "no-cache", "text/html; charset=utf-8"},
		{"index by name", "/admin/index.html", 200, index, "no-cache", "text/html; charset=utf-8"},
		{"playground", "/playground", 200, index, "no-cache", "text/html; charset=utf-8"},
		{"playground slash", "/playground/", 200, index, "no-cache", "text/html; charset=utf-8"},
		{"hashed asset", "/admin/assets/index-abc123.css", 200, "body{}", "public, max-age=31536000, immutable", "text/css; charset=utf-8"},
		{"font", "/admin/assets/inter-latin.woff2", 200, "", "public, max-age=31536000, immutable", "font/woff2"},
		{"unhashed file", "/admin/favicon.svg", 200, "<svg", "no-cache", "image/svg+xml"},
		{"missing asset is a 404, not index.html", "/admin/assets/gone-999.js", 404, "404", "no-cache", ""},
		{"missing file with extension", "/admin/robots.txt", 404, "404", "", ""},
		{"dot-dot stays inside", "/admin/../go.mod", 404, "", "", ""},
		{"outside the mount", "/elsewhere", 404, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := get(t, h, http.MethodGet, tt.path, nil)
			if rec.Code != tt.status {
				t.Fatalf("GET %s: status %d, want %d (body %q)", tt.path, rec.Code, tt.status, rec.Body.String())
			}
			if tt.body != "" && !strings.Contains(rec.Body.String(), tt.body) {
				t.Errorf("GET %s: body %q does not contain %q", tt.path, rec.Body.String(), tt.body)
			}
			if tt.cache != "" && rec.Header().Get("Cache-Control") != tt.cache {
				t.Errorf("GET %s: Cache-Control %q, want %q", tt.path, rec.Header().Get("Cache-Control"), tt.cache)
			}
			if tt.ctype != "" && rec.Header().Get("Content-Type") != tt.ctype {
				t.Errorf("GET %s: Content-Type %q, want %q", tt.path, rec.Header().Get("Content-Type"), tt.ctype)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'self'") {
				t.Errorf("GET %s: security headers missing: %v", tt.path, rec.Header())
			}
		})
	}
}

func TestHandlerGzipAndETag(t *testing.T) {
	t.Parallel()
	h := newHandler(built)
	const js = "/admin/assets/index-abc123.js"
	rec := get(t, h, http.MethodGet, js, map[string]string{"Accept-Encoding": "br, gzip"})
	if rec.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("no gzip for a large script: %v", rec.Header())
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if string(plain) != string(built["assets/index-abc123.js"].Data) {
		t.Fatalf("gzip body decodes to %d bytes, want the file", len(plain))
	}
	if rec.Header().Get("Vary") != "Accept-Encoding" {
		t.Errorf("Vary = %q", rec.Header().Get("Vary"))
	}

	rec = get(t, h, http.MethodGet, js, nil)
	if rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != string(built["assets/index-abc123.js"].Data) {
		t.Fatalf("a client without gzip got an encoded body")
	}
	etag := rec.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	rec = get(t, h, http.MethodGet, "/admin/", map[string]string{"If-None-Match": newHandler(built).load("index.html").etag})
	if rec.Code != http.StatusNotModified {
		t.Fatalf("If-None-Match on index.html: %d, want 304", rec.Code)
	}
}

func TestHandlerMethods(t *testing.T) {
	t.Parallel()
	h := newHandler(built)
	if rec := get(t, h, http.MethodPost, "/admin/", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d, want 405", rec.Code)
	}
	rec := get(t, h, http.MethodHead, "/admin/jobs", nil)
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("HEAD: %d with %d body bytes", rec.Code, rec.Body.Len())
	}
}

func TestHandlerWithoutBuild(t *testing.T) {
	t.Parallel()
	h := newHandler(fstest.MapFS{"placeholder.html": {Data: []byte("<h1>The admin console is not built</h1>")}})
	for _, p := range []string{"/admin/", "/admin/jobs/x", "/playground"} {
		rec := get(t, h, http.MethodGet, p, nil)
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "not built") {
			t.Errorf("GET %s without a build: %d %q, want 503 with the placeholder", p, rec.Code, rec.Body.String())
		}
	}
}

// The embedded dist always has a placeholder, so the package builds before any npm build.
func TestEmbeddedDist(t *testing.T) {
	t.Parallel()
	rec := get(t, Handler(), http.MethodGet, "/admin/", nil)
	if rec.Code != http.StatusOK && rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("embedded console: %d", rec.Code)
	}
}
