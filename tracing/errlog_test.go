package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/testenv"
)

// TestExportFailuresAreWarnings: with a Logger, a batch of spans the receiver cannot take
// (nothing listens at the endpoint) is logged as a warning through it. Not parallel:
// OpenTelemetry's error handler is the process's.
func TestExportFailuresAreWarnings(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + addr, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10") // ms: the batch goes at once
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1000")
	sdk, err := Setup(context.Background(), Config{Exporter: ExporterOTLP, Instance: "i", Version: "v", Logger: log,
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil || sdk == nil {
		t.Fatalf("Setup: %v, %v", sdk, err)
	}
	defer func() { _ = sdk.Shutdown(context.Background()) }()
	_, span := sdk.Tracer("test").Start(context.Background(), "lost")
	span.End()

	var line map[string]any
	testenv.Eventually(t, time.Minute, "the export failure to be logged", func() bool {
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "trace export failed" {
				line = m
				return true
			}
		}
		return false
	})
	if line["level"] != "WARN" || line["err"] == "" {
		t.Errorf("export failure logged as %v; want a WARN with the error", line)
	}
}

// lockedBuffer is a buffer one goroutine writes while another reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
