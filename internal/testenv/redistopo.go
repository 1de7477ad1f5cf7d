//go:build unix

package testenv

// Redis topologies of a test's own: Sentinel (a master, a replica and three sentinels),
// Cluster (three masters) and a server that speaks TLS with certificates the test makes.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name the sentinels of PrivateSentinel monitor.
const SentinelMaster = "mymaster"

// SentinelSet is a private Sentinel deployment: one master, one replica and three
// sentinels with a quorum of two, which fail over a second after the master stops answering.
type SentinelSet struct {
	Master, Replica *RedisServer
	Sentinels       []*RedisServer
}

// PrivateSentinel starts a SentinelSet and waits until every sentinel knows the replica and
// the other sentinels, so that killing the master leads to a failover.
func PrivateSentinel(t testing.TB) *SentinelSet {
	t.Helper()
	set := &SentinelSet{Master: PrivateRedis(t)}
	masterPort := strconv.Itoa(set.Master.Port)
	set.Replica = privateRedis(t, "redis replica", func(*RedisServer) []string {
		return []string{"--replicaof", "127.0.0.1", masterPort}
	})
	for range 3 {
		set.Sentinels = append(set.Sentinels, privateRedis(t, "redis sentinel", func(s *RedisServer) []string {
			conf := filepath.Join(s.Dir, "sentinel.conf")
			text := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]s 2\n"+
				"sentinel down-after-milliseconds %[1]s 1000\n"+
				"sentinel failover-timeout %[1]s 5000\n"+
				"sentinel parallel-syncs %[1]s 1\n", SentinelMaster, masterPort)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				t.Errorf("testenv: write %s: %v", conf, err)
			}
			return []string{conf, "--sentinel"}
		}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, s := range set.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.addr()})
		err := pollUntil(ctx, func() bool {
			m, err := c.Master(ctx, SentinelMaster).Result()
			return err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2"
		})
		_ = c.Close()
		if err != nil {
			t.Fatalf("testenv: sentinel on port %d did not see the replica and the other sentinels: %v\n%s", s.Port, err, logTail(s.LogFile))
		}
	}
	return set
}

// URL returns the redis+sentinel URL of the set, database 0.
func (set *SentinelSet) URL() string {
	hosts := make([]string, len(set.Sentinels))
	for i, s := range set.Sentinels {
		hosts[i] = s.addr()
	}
	return "redis+sentinel://" + strings.Join(hosts, ",") + "/" + SentinelMaster + "/0"
}

// ClusterSet is a private Redis Cluster of three masters without replicas.
type ClusterSet struct {
	Nodes []*RedisServer
}

// PrivateCluster starts three cluster-enabled servers, joins them with redis-cli --cluster
// create, and waits until every node reports cluster_state:ok.
func PrivateCluster(t testing.TB) *ClusterSet {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("testenv: redis-cli not found on PATH (apt-get install redis-tools): %v", err)
	}
	set := &ClusterSet{}
	for range 3 {
		set.Nodes = append(set.Nodes, privateRedis(t, "redis cluster node", func(s *RedisServer) []string {
			return []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(s.Dir, "nodes.conf"),
				"--cluster-node-timeout", "2000"}
		}))
	}
	args := []string{"--cluster", "create"}
	for _, n := range set.Nodes {
		args = append(args, n.addr())
	}
	args = append(args, "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("testenv: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, n := range set.Nodes {
		c := redis.NewClient(&redis.Options{Addr: n.addr()})
		err := pollUntil(ctx, func() bool {
			info, err := c.ClusterInfo(ctx).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:3")
		})
		_ = c.Close()
		if err != nil {
			t.Fatalf("testenv: cluster node on port %d not ready: %v\n%s", n.Port, err, logTail(n.LogFile))
		}
	}
	return set
}

// Client returns a Cluster client seeded with node seed only (it finds the others itself),
// closed when t ends.
func (set *ClusterSet) Client(t testing.TB, seed int) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{set.Nodes[seed].addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// URL returns the redis+cluster URL of the set, every node a seed.
func (set *ClusterSet) URL() string {
	hosts := make([]string, len(set.Nodes))
	for i, n := range set.Nodes {
		hosts[i] = n.addr()
	}
	return "redis+cluster://" + strings.Join(hosts, ",")
}

// Certs are PEM files of a CA and of a server certificate it signed for 127.0.0.1 and
// localhost.
type Certs struct {
	CAFile, CertFile, KeyFile string
}

// MakeCerts makes a CA and a server certificate for 127.0.0.1 in the test's temporary
// directory.
func MakeCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "server.pem"), KeyFile: filepath.Join(dir, "server-key.pem")}
	caKey := newKey(t)
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "baton test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("testenv: make CA: %v", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key := newKey(t)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatalf("testenv: make server certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, c.CAFile, "CERTIFICATE", caDER)
	writePEM(t, c.CertFile, "CERTIFICATE", leafDER)
	writePEM(t, c.KeyFile, "PRIVATE KEY", keyDER)
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TLSRedis is a private Redis that also listens with TLS.
type TLSRedis struct {
	*RedisServer
	TLSPort int
	Certs   *Certs
}

// PrivateTLSRedis starts a private Redis that speaks TLS on TLSPort, with a certificate of
// MakeCerts, besides plain TCP on Port (used only to see that it is up). Clients need no
// certificate of their own.
func PrivateTLSRedis(t testing.TB) *TLSRedis {
	t.Helper()
	tr := &TLSRedis{TLSPort: FreePort(t), Certs: MakeCerts(t)}
	tr.RedisServer = privateRedis(t, "redis tls", func(*RedisServer) []string {
		return []string{"--tls-port", strconv.Itoa(tr.TLSPort), "--tls-cert-file", tr.Certs.CertFile,
			"--tls-key-file", tr.Certs.KeyFile, "--tls-ca-cert-file", tr.Certs.CAFile, "--tls-auth-clients", "no"}
	})
	return tr
}

// TLSURL returns the rediss URL of the server's TLS port, database 0.
func (tr *TLSRedis) TLSURL() string {
	return "rediss://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(tr.TLSPort)) + "/0"
}

// pollUntil calls ok every 20ms until it reports true or ctx ends.
func pollUntil(ctx context.Context, ok func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}
