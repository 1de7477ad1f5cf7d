package notify

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// nonPublic are the ranges a delivery may not reach unless private networks are allowed,
// besides those netip names (loopback, link-local, private, unspecified, multicast).
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and the broadcast address
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2002:a00::/24"),  // 6to4 of 10/8
	netip.MustParsePrefix("2002:7f00::/24"), // 6to4 of 127/8
	netip.MustParsePrefix("2002:a9fe::/32"), // 6to4 of 169.254/16
	netip.MustParsePrefix("2002:ac10::/28"), // 6to4 of 172.16/12
	netip.MustParsePrefix("2002:c0a8::/32"), // 6to4 of 192.168/16
}

// publicAddress reports whether ip is one a delivery may reach without
// AllowPrivateNetworks: not loopback, link-local, private (RFC 1918, ULA), carrier-grade NAT,
// unspecified, multicast or otherwise reserved. An IPv4-mapped IPv6 address is judged as its
// IPv4 address.
func publicAddress(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsUnspecified() || ip.IsMulticast() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// refusePrivate is a net.Dialer's Control: it runs on the address being dialled, after the
// name was resolved, so a name that resolves to a private address (or changes to one between
// two lookups) is refused as surely as a literal one.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%s: not an IP address", host)
	}
	if !publicAddress(ip) {
		return fmt.Errorf("the receiver's address %s is not a public address: deliveries to loopback, link-local and private networks need --notify-allow-private-networks", ip)
	}
	return nil
}

// newClient is the client a Sender makes its requests with: no proxy from the environment,
// no redirect followed, and, unless allowPrivate, no connection to an address that is not
// public.
func newClient(allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = refusePrivate
	}
	transport := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, addr)
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
