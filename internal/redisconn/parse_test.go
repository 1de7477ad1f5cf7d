package redisconn_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/redisconn"
	"github.com/baton-run/baton/internal/testenv"
	bt "github.com/baton-run/baton/runner/batontype"
)

func TestParseForms(t *testing.T) {
	t.Parallel()
	t.Run("single", func(t *testing.T) {
		s := mustParse(t, "redis://:pw@127.0.0.1:6380/3?dial_timeout=2s", redisconn.Options{})
		if s.Topology != redisconn.Single || s.TLS || s.Single.Addr != "127.0.0.1:6380" || s.Single.DB != 3 ||
			s.Single.Password != "pw" || s.Single.DialTimeout != 2*time.Second || !s.Single.ContextTimeoutEnabled {
			t.Fatalf("got %+v", s.Single)
		}
	})
	t.Run("tls", func(t *testing.T) {
		s := mustParse(t, "rediss://cache.internal:6380", redisconn.Options{})
		if !s.TLS || s.Single.TLSConfig == nil || s.Single.TLSConfig.ServerName != "cache.internal" {
			t.Fatalf("got %+v", s.Single)
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		s := mustParse(t, "redis+sentinel://u:p%40ss@s1:5000,s2,[::1]:5002/mymaster/2?sentinel_password=sp&pool_size=7", redisconn.Options{})
		f := s.Failover
		if s.Topology != redisconn.Sentinel || f.MasterName != "mymaster" || f.DB != 2 || f.PoolSize != 7 {
			t.Fatalf("got %+v", f)
		}
		if want := []string{"s1:5000", "s2:26379", "[::1]:5002"}; !reflect.DeepEqual(f.SentinelAddrs, want) {
			t.Fatalf("sentinels %v, want %v", f.SentinelAddrs, want)
		}
		if f.Username != "u" || f.Password != "p@ss" || f.SentinelPassword != "sp" || !f.ContextTimeoutEnabled {
			t.Fatalf("credentials %q %q %q", f.Username, f.Password, f.SentinelPassword)
		}
	})
	t.Run("sentinel db option", func(t *testing.T) {
		s := mustParse(t, "rediss+sentinel://s1/mymaster?db=4", redisconn.Options{})
		if !s.TLS || s.Failover.DB != 4 || s.Failover.TLSConfig == nil {
			t.Fatalf("got %+v", s.Failover)
		}
	})
	t.Run("cluster", func(t *testing.T) {
		s := mustParse(t, "redis+cluster://:pw@c1:7000,c2:7001,c3?read_timeout=1s", redisconn.Options{})
		c := s.Cluster
		if want := []string{"c1:7000", "c2:7001", "c3:6379"}; s.Topology != redisconn.Cluster || !reflect.DeepEqual(c.Addrs, want) {
			t.Fatalf("seeds %v, want %v", c.Addrs, want)
		}
		if c.Password != "pw" || c.ReadTimeout != time.Second || !c.ContextTimeoutEnabled {
			t.Fatalf("got %+v", c)
		}
	})
	t.Run("ca file", func(t *testing.T) {
		s := mustParse(t, "rediss+cluster://c1:7000/", redisconn.Options{CAFile: writeCA(t)})
		if s.Cluster.TLSConfig == nil || s.Cluster.TLSConfig.RootCAs == nil {
			t.Fatalf("CA file not loaded: %+v", s.Cluster.TLSConfig)
		}
	})
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	ca := writeCA(t)
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		url, ca, field, want string
	}{
		{"127.0.0.1:6379", "", redisconn.FieldURL, "no scheme"},
		{"http://h:1", "", redisconn.FieldURL, "unknown Redis URL scheme"},
		{"redis+ring://h:1", "", redisconn.FieldURL, "unknown Redis topology"},
		{"redis://h:1/notanumber", "", redisconn.FieldURL, "bad single-server"},
		{"redis://h:1?bogus=1", "", redisconn.FieldURL, "bad single-server"},
		{"redis+sentinel://s1,s2", "", redisconn.FieldURL, "names the master"},
		{"redis+sentinel://s1,,s2/m", "", redisconn.FieldURL, "empty host"},
		{"redis+sentinel://s1:99999/m", "", redisconn.FieldURL, "bad Redis host"},
		{"redis+sentinel://s1/m/x", "", redisconn.FieldURL, "bad database number"},
		{"redis+sentinel://s1/m/1?db=2", "", redisconn.FieldURL, "database twice"},
		{"redis+sentinel://s1/m?master_name=x", "", redisconn.FieldURL, "not accepted here"},
		{"redis+sentinel://s1/m?bogus=1", "", redisconn.FieldURL, "bad Sentinel URL"},
		{"redis+cluster://c1/0", "", redisconn.FieldURL, "has no database"},
		{"redis+cluster://c1?addr=c2:1", "", redisconn.FieldURL, "not accepted here"},
		{"redis+cluster://c1?bogus=1", "", redisconn.FieldURL, "bad Cluster URL"},
		{"redis://h:1", ca, redisconn.FieldCAFile, "does not use TLS"},
		{"rediss://h:1", filepath.Join(t.TempDir(), "missing.pem"), redisconn.FieldCAFile, "read the Redis CA file"},
		{"rediss://h:1", notPEM, redisconn.FieldCAFile, "holds no PEM certificate"},
	} {
		_, err := redisconn.Parse(tc.url, redisconn.Options{CAFile: tc.ca})
		var be *bt.Error
		if !errors.As(err, &be) || be.Code != bt.CodeInvalidInput || be.Field != tc.field || !strings.Contains(be.Error(), tc.want) {
			t.Errorf("Parse(%q, ca %q) = %v; want INVALID_INPUT on %s saying %q", tc.url, tc.ca, err, tc.field, tc.want)
		}
	}
}

func TestParseErrorHidesPassword(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"redis://:s3cret@h:1/%zz", "redis+sentinel://:s3cret@s1/m?bogus=1", "redis+cluster://:s3cret@c1?bogus=1"} {
		_, err := redisconn.Parse(u, redisconn.Options{})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Parse(%q) = %v; want an error without the password", u, err)
		}
	}
}

func mustParse(t *testing.T, u string, o redisconn.Options) *redisconn.Spec {
	t.Helper()
	s, err := redisconn.Parse(u, o)
	if err != nil {
		t.Fatalf("Parse(%q): %v", u, err)
	}
	return s
}

// writeCA writes a CA certificate the test makes and returns its file.
func writeCA(t *testing.T) string {
	t.Helper()
	return testenv.MakeCerts(t).CAFile
}
