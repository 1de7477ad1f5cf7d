// Package frontend serves the admin console: the React SPA built into dist/ by `npm run
// build` (make build), embedded in the binary. Handler serves it under /admin/ with SPA
// routing and at /playground, where the SPA shows GraphiQL from its own bundle.
package frontend

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// dist holds the build output; in a checkout without a build it holds only placeholder.html,
// which Handler serves in place of the console.
//
//go:embed all:dist
var dist embed.FS

// Handler serves the embedded console. Mount it at /admin/, /playground and /playground/.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic("frontend: embedded dist is missing: " + err.Error()) // cannot happen with go:embed
	}
	return newHandler(sub)
}

const (
	// assetsPrefix is where Vite writes content-hashed files: safe to cache for a year.
	assetsPrefix = "assets/"
	// basePath is the SPA's Vite base.
	basePath = "/admin/"
	// minGzipSize is the smallest file worth compressing.
	minGzipSize = 1024
)

// securityHeaders apply to every response of the console. The policy allows only this origin:
// everything is bundled, GraphiQL's editor runs its language services in same-origin workers,
// and the API (HTTP and WebSocket) lives on this host. Inline styles are needed by Mantine.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
		"frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
}

// file is one embedded file, read once, with its gzip form when that is smaller.
type file struct {
	name    string
	body    []byte
	gzipped []byte
	etag    string
	ctype   string
}

type handler struct {
	fsys  fs.FS
	index string // "index.html", or "placeholder.html" when the SPA was not built
	mu    sync.Mutex
	files map[string]*file
}

func newHandler(fsys fs.FS) *handler {
	h := &handler{fsys: fsys, index: "index.html", files: map[string]*file{}}
	if _, err := fs.Stat(fsys, "index.html"); err != nil {
		h.index = "placeholder.html"
	}
	return h
}

// load reads and caches an embedded file; nil when it does not exist or is a directory.
func (h *handler) load(name string) *file {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.files[name]; ok {
		return f
	}
	body, err := fs.ReadFile(h.fsys, name)
	if err != nil {
		h.files[name] = nil
		return nil
	}
	sum := sha256.Sum256(body)
	f := &file{name: name, body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
	f.ctype = mime.TypeByExtension(path.Ext(name))
	if f.ctype == "" {
		f.ctype = http.DetectContentType(body)
	}
	if len(body) >= minGzipSize && compressible(f.ctype) {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(body)
		_ = zw.Close()
		if buf.Len() < len(body) {
			f.gzipped = buf.Bytes()
		}
	}
	h.files[name] = f
	return f
}

func compressible(ctype string) bool {
	for _, p := range []string{"text/", "application/javascript", "application/json", "image/svg+xml", "font/ttf"} {
		if strings.HasPrefix(ctype, p) {
			return true
		}
	}
	return false
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := path.Clean(r.URL.Path)
	if strings.HasSuffix(r.URL.Path, "/") && p != "/" {
		p += "/"
	}
	switch {
	case p == "/playground" || p == "/playground/":
		// A route of the SPA: it loads GraphiQL from its bundle.
		h.serveIndex(w, r)
		return
	case p == "/admin" || p == "/admin/":
		h.serveIndex(w, r)
		return
	case !strings.HasPrefix(p, basePath):
		http.NotFound(w, r)
		return
	}
	name := strings.TrimSuffix(strings.TrimPrefix(p, basePath), "/")
	if name == "index.html" || name == h.index {
		h.serveIndex(w, r)
		return
	}
	if !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	if f := h.load(name); f != nil {
		cache := "no-cache"
		if strings.HasPrefix(name, assetsPrefix) {
			cache = "public, max-age=31536000, immutable"
		}
		h.serveFile(w, r, f, cache, http.StatusOK)
		return
	}
	if strings.HasPrefix(name, assetsPrefix) || path.Ext(name) != "" {
		// A missing asset must not turn into index.html: the browser would run HTML as script.
		w.Header().Set("Cache-Control", "no-cache")
		http.NotFound(w, r)
		return
	}
	// Any other path under /admin/ is a route of the SPA.
	h.serveIndex(w, r)
}

// serveIndex serves the SPA's entry point, never cached, so a new build is picked up at once.
func (h *handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	f := h.load(h.index)
	if f == nil {
		http.Error(w, "the admin console is not built into this binary (run make build)", http.StatusNotFound)
		return
	}
	status := http.StatusOK
	if h.index != "index.html" {
		status = http.StatusServiceUnavailable
	}
	h.serveFile(w, r, f, "no-cache", status)
}

func (h *handler) serveFile(w http.ResponseWriter, r *http.Request, f *file, cache string, status int) {
	hdr := w.Header()
	hdr.Set("Cache-Control", cache)
	hdr.Set("Content-Type", f.ctype)
	hdr.Set("Vary", "Accept-Encoding")
	body := f.body
	if f.gzipped != nil && acceptsGzip(r) {
		hdr.Set("Content-Encoding", "gzip")
		hdr.Set("ETag", strings.TrimSuffix(f.etag, `"`)+`-gz"`)
		body = f.gzipped
	} else {
		hdr.Set("ETag", f.etag)
	}
	if status != http.StatusOK {
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
		return
	}
	// ServeContent answers If-None-Match with 304 and handles HEAD and ranges.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
