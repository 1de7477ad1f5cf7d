package tracing_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// span is one span a receiver got, with what the tests look at.
type span struct {
	name            string
	traceID, spanID string
	parentID        string
	kind            tracepb.Span_SpanKind
	attrs           map[string]string
	service         string
}

// receiver is an OTLP trace receiver, over HTTP (protobuf) or gRPC: it decodes what the
// exporters send, as a collector would, and keeps the spans.
type receiver struct {
	mu    sync.Mutex
	spans []span
}

func (rc *receiver) add(req *coltracepb.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := attrsOf(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				rc.spans = append(rc.spans, span{name: s.GetName(), traceID: hex.EncodeToString(s.GetTraceId()),
					spanID: hex.EncodeToString(s.GetSpanId()), parentID: hex.EncodeToString(s.GetParentSpanId()),
					kind: s.GetKind(), attrs: attrsOf(s.GetAttributes()), service: service})
			}
		}
	}
}

func attrsOf(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			out[kv.GetKey()] = v.GetStringValue()
		case v.GetIntValue() != 0:
			out[kv.GetKey()] = strconv.FormatInt(v.GetIntValue(), 10)
		default:
			out[kv.GetKey()] = v.String()
		}
	}
	return out
}

// all returns the spans received so far.
func (rc *receiver) all() []span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]span(nil), rc.spans...)
}

// httpReceiver serves OTLP/HTTP protobuf at /v1/traces until the test ends, and returns its
// base URL.
func httpReceiver(t *testing.T, rc *receiver) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP/HTTP receiver: %s %s (%s), want POST /v1/traces in protobuf", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("OTLP/HTTP receiver: decode: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.add(&req)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = io.Copy(w, bytes.NewReader(out))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// grpcReceiver serves the OTLP gRPC trace service until the test ends, and returns its
// address as an http:// URL (no TLS).
func grpcReceiver(t *testing.T, rc *receiver) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, traceService{rc: rc})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

type traceService struct {
	coltracepb.UnimplementedTraceServiceServer
	rc *receiver
}

func (s traceService) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	s.rc.add(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}
