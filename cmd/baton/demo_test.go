package main

import (
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/demo"
)

func TestDemoConfigProviderURL(t *testing.T) {
	t.Setenv("BATON_DEMO_FAST", "")
	t.Setenv("BATON_DEMO_PROVIDER_URL", "")
	c, err := demoConfig()
	if err != nil || c.Payments != nil {
		t.Fatalf("without a provider URL: payments %v, %v; want the in-process provider", c.Payments, err)
	}

	t.Setenv("BATON_DEMO_FAST", "1")
	t.Setenv("BATON_DEMO_PROVIDER_URL", "http://127.0.0.1:8099")
	c, err = demoConfig()
	if err != nil {
		t.Fatal(err)
	}
	hp, ok := c.Payments.(*demo.HTTPProvider)
	if !ok || hp.URL() != "http://127.0.0.1:8099" {
		t.Fatalf("payments %#v, want an HTTP provider at http://127.0.0.1:8099", c.Payments)
	}
	if c.Collect.Pages != demo.FastConfig().Collect.Pages {
		t.Fatalf("fast sizes lost with a provider URL: %d pages", c.Collect.Pages)
	}

	t.Setenv("BATON_DEMO_PROVIDER_URL", "127.0.0.1:8099")
	if _, err := demoConfig(); err == nil || !strings.Contains(err.Error(), "BATON_DEMO_PROVIDER_URL") {
		t.Fatalf("a provider URL without a scheme: %v, want an error naming BATON_DEMO_PROVIDER_URL", err)
	}
}
