// Package redisconn turns Baton's Redis URL into a go-redis client. The URL's scheme picks
// the topology:
//
//	redis://[user:password@]host:port[/db][?options]          one server
//	rediss://…                                                 one server over TLS
//	redis+sentinel://[user:password@]h1:p1,h2:p2,h3:p3/master[/db][?options]
//	rediss+sentinel://…                                        Sentinel, TLS to every node
//	redis+cluster://[user:password@]h1:p1,h2:p2,h3:p3[?options]
//	rediss+cluster://…                                         Cluster seeds, TLS to every node
//
// Sentinel follows a failover: go-redis' failover client asks the sentinels for the master
// and reconnects when they promote another. The user and password are those of the master
// and replicas; the sentinels' own take the options sentinel_username and
// sentinel_password. A sentinel address without a port means 26379, any other address
// without one 6379. Cluster takes seeds and learns the rest of the nodes from them; it has
// only database 0, so its URL has no path.
//
// The options are go-redis' own (dial_timeout=3s, pool_size=20, …; see redis.ParseURL,
// redis.ParseFailoverURL and redis.ParseClusterURL); an unknown option is an error. With a
// CA file the TLS schemes trust the certificates it holds instead of the system's.
//
// Every client has ContextTimeoutEnabled set: without it go-redis ignores context deadlines
// on socket reads, and a stalled Redis (accepting, never answering) would hold every lock call
// for ReadTimeout and more, long enough to cost a run its lease although PostgreSQL, the
// fence, is healthy.
package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Topology is the kind of deployment a URL names.
type Topology string

// The topologies.
const (
	Single   Topology = "single"
	Sentinel Topology = "sentinel"
	Cluster  Topology = "cluster"
)

// Field names the settings in errors: an error about the URL has Field "BATON_REDIS_URL", one
// about the CA file "BATON_REDIS_CA_FILE".
const (
	FieldURL    = "BATON_REDIS_URL"
	FieldCAFile = "BATON_REDIS_CA_FILE"
)

// Options are the settings besides the URL.
type Options struct {
	// CAFile is a PEM file of the certificates that sign the servers' certificates, for the
	// rediss schemes; "" trusts the system's roots.
	CAFile string
}

// Spec is a parsed URL: its topology, whether it uses TLS, and the go-redis options of the
// client it makes.
type Spec struct {
	Topology Topology
	TLS      bool
	// Exactly one is set, by Topology.
	Single   *redis.Options
	Failover *redis.FailoverOptions
	Cluster  *redis.ClusterOptions
}

// New returns the client for rawURL, without connecting.
func New(rawURL string, o Options) (redis.UniversalClient, error) {
	s, err := Parse(rawURL, o)
	if err != nil {
		return nil, err
	}
	return s.Client(), nil
}

// Client makes the client s describes, without connecting.
func (s *Spec) Client() redis.UniversalClient {
	switch s.Topology {
	case Sentinel:
		return redis.NewFailoverClient(s.Failover)
	case Cluster:
		return redis.NewClusterClient(s.Cluster)
	default:
		return redis.NewClient(s.Single)
	}
}

// IsCluster reports whether c is a Cluster client, whose live events use sharded pub/sub.
func IsCluster(c redis.UniversalClient) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}

// Parse reads rawURL and o into a Spec. Its errors are *bt.Error with code INVALID_INPUT and
// the Field of the setting at fault; they never repeat the URL, which may hold a password.
func Parse(rawURL string, o Options) (*Spec, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, urlErr(nil, "the Redis URL has no scheme; use redis://, rediss://, redis+sentinel:// or redis+cluster://")
	}
	s := &Spec{}
	base, topo, _ := strings.Cut(strings.ToLower(scheme), "+")
	switch base {
	case "redis":
	case "rediss":
		s.TLS = true
	default:
		return nil, urlErr(nil, "unknown Redis URL scheme %q; use redis, rediss, redis+sentinel, rediss+sentinel, redis+cluster or rediss+cluster", scheme)
	}
	var err error
	switch topo {
	case "":
		s.Topology = Single
		s.Single, err = redis.ParseURL(base + "://" + rest)
		if err != nil {
			return nil, urlErr(err, "bad single-server Redis URL")
		}
	case "sentinel":
		s.Topology = Sentinel
		s.Failover, err = parseSentinel(base, rest)
	case "cluster":
		s.Topology = Cluster
		s.Cluster, err = parseCluster(base, rest)
	default:
		return nil, urlErr(nil, "unknown Redis topology %q in the URL scheme; use +sentinel or +cluster", topo)
	}
	if err != nil {
		return nil, err
	}
	if err := s.setTLS(o.CAFile); err != nil {
		return nil, err
	}
	s.setContextTimeout()
	return s, nil
}

// setContextTimeout sets ContextTimeoutEnabled on the client's options (see the package
// documentation).
func (s *Spec) setContextTimeout() {
	switch s.Topology {
	case Sentinel:
		s.Failover.ContextTimeoutEnabled = true
	case Cluster:
		s.Cluster.ContextTimeoutEnabled = true
	default:
		s.Single.ContextTimeoutEnabled = true
	}
}

// setTLS loads caFile into the TLS configuration go-redis made for a rediss scheme.
func (s *Spec) setTLS(caFile string) error {
	if caFile == "" {
		return nil
	}
	if !s.TLS {
		return &bt.Error{Code: bt.CodeInvalidInput, Field: FieldCAFile,
			Message: "a Redis CA file is set but the Redis URL does not use TLS; use a rediss scheme or unset BATON_REDIS_CA_FILE"}
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return &bt.Error{Code: bt.CodeInvalidInput, Field: FieldCAFile, Message: "read the Redis CA file", Err: err}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return &bt.Error{Code: bt.CodeInvalidInput, Field: FieldCAFile,
			Message: fmt.Sprintf("the Redis CA file %s holds no PEM certificate", caFile)}
	}
	var cfg **tls.Config
	switch s.Topology {
	case Sentinel:
		cfg = &s.Failover.TLSConfig
	case Cluster:
		cfg = &s.Cluster.TLSConfig
	default:
		cfg = &s.Single.TLSConfig
	}
	if *cfg == nil {
		*cfg = &tls.Config{}
	}
	(*cfg).RootCAs = pool
	if (*cfg).MinVersion == 0 {
		(*cfg).MinVersion = tls.VersionTLS12
	}
	return nil
}

// authority is the part of a multi-host URL between "://" and the path: the user info and
// the hosts, each with a port.
type authority struct {
	user  *url.Userinfo
	hosts []string
	path  string
	query url.Values
}

// splitAuthority cuts rest (the URL after "://") into its user info, comma-separated hosts
// (defaultPort added where a host has none), path and query.
func splitAuthority(rest, defaultPort string) (*authority, error) {
	hostPart, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hostPart, tail = rest[:i], rest[i:]
	}
	a := &authority{}
	if i := strings.LastIndex(hostPart, "@"); i >= 0 {
		// Parse the user info through net/url, which unescapes it.
		u, err := url.Parse("redis://" + hostPart[:i+1] + "h")
		if err != nil {
			return nil, urlErr(nil, "bad user or password in the Redis URL")
		}
		a.user, hostPart = u.User, hostPart[i+1:]
	}
	for h := range strings.SplitSeq(hostPart, ",") {
		if h == "" {
			return nil, urlErr(nil, "the Redis URL lists an empty host; separate hosts with single commas")
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, defaultPort
			if strings.Contains(strings.Trim(h, "[]"), ":") && !strings.HasPrefix(h, "[") {
				return nil, urlErr(nil, "bad Redis host %q; write IPv6 addresses in brackets", h)
			}
			host = strings.Trim(host, "[]")
		}
		if n, err := strconv.Atoi(port); host == "" || err != nil || n < 1 || n > 65535 {
			return nil, urlErr(nil, "bad Redis host %q; want host:port", h)
		}
		a.hosts = append(a.hosts, net.JoinHostPort(host, port))
	}
	u, err := url.Parse("redis://h" + tail)
	if err != nil {
		return nil, urlErr(nil, "bad path or options in the Redis URL")
	}
	a.path, a.query = u.Path, u.Query()
	for _, k := range []string{"addr", "master_name", "username", "password"} {
		if a.query.Has(k) {
			return nil, urlErr(nil, "the Redis URL option %s is not accepted here: put hosts before the path, the master name in the path and the user and password before the hosts", k)
		}
	}
	return a, nil
}

// goRedisURL spells a back as a URL go-redis parses: the first host in the authority, the
// others as addr options.
func (a *authority) goRedisURL(scheme string, user *url.Userinfo) string {
	q := url.Values{}
	for k, v := range a.query {
		q[k] = v
	}
	for _, h := range a.hosts[1:] {
		q.Add("addr", h)
	}
	u := url.URL{Scheme: scheme, User: user, Host: a.hosts[0], RawQuery: q.Encode()}
	return u.String()
}

// parseSentinel reads the URL after "redis+sentinel://".
func parseSentinel(scheme, rest string) (*redis.FailoverOptions, error) {
	a, err := splitAuthority(rest, "26379")
	if err != nil {
		return nil, err
	}
	segs := strings.FieldsFunc(a.path, func(r rune) bool { return r == '/' })
	if len(segs) == 0 || len(segs) > 2 {
		return nil, urlErr(nil, "a Sentinel URL names the master in its path: redis+sentinel://host1,host2,host3/mymaster[/db]")
	}
	master := segs[0]
	if len(segs) == 2 {
		if a.query.Has("db") {
			return nil, urlErr(nil, "the Sentinel URL gives the database twice, in the path and as db")
		}
		if _, err := strconv.Atoi(segs[1]); err != nil {
			return nil, urlErr(nil, "bad database number %q in the Sentinel URL", segs[1])
		}
		a.query.Set("db", segs[1])
	}
	// go-redis takes the sentinels' credentials from the user info and the master's from
	// options; Baton's URL gives the master's in the user info, like every other form.
	var sentinelUser *url.Userinfo
	if p := a.query.Get("sentinel_password"); p != "" || a.query.Has("sentinel_username") {
		sentinelUser = url.UserPassword(a.query.Get("sentinel_username"), p)
	}
	a.query.Del("sentinel_username")
	a.query.Del("sentinel_password")
	if a.user != nil {
		a.query.Set("username", a.user.Username())
		if p, ok := a.user.Password(); ok {
			a.query.Set("password", p)
		}
	}
	a.query.Set("master_name", master)
	o, err := redis.ParseFailoverURL(a.goRedisURL(scheme, sentinelUser))
	if err != nil {
		return nil, urlErr(err, "bad Sentinel URL")
	}
	return o, nil
}

// parseCluster reads the URL after "redis+cluster://".
func parseCluster(scheme, rest string) (*redis.ClusterOptions, error) {
	a, err := splitAuthority(rest, "6379")
	if err != nil {
		return nil, err
	}
	if strings.Trim(a.path, "/") != "" || a.query.Has("db") {
		return nil, urlErr(nil, "a Cluster URL has no database (Redis Cluster has only database 0): redis+cluster://host1,host2,host3")
	}
	o, err := redis.ParseClusterURL(a.goRedisURL(scheme, a.user))
	if err != nil {
		return nil, urlErr(err, "bad Cluster URL")
	}
	return o, nil
}

// urlErr returns the error about the URL. A cause from net/url quotes the URL, password
// and all, so only its reason is kept.
func urlErr(cause error, format string, args ...any) error {
	var ue *url.Error
	if errors.As(cause, &ue) {
		cause = ue.Err
	}
	return &bt.Error{Code: bt.CodeInvalidInput, Field: FieldURL, Message: fmt.Sprintf(format, args...), Err: cause}
}
