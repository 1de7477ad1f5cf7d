package notify

import (
	"net/netip"
	"testing"
)

func TestPublicAddress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ip     string
		public bool
	}{
		{"127.0.0.1", false}, {"127.8.9.10", false}, {"::1", false}, {"10.1.2.3", false}, {"172.16.0.1", false},
		{"172.31.255.255", false}, {"192.168.1.1", false}, {"100.64.0.1", false}, {"100.127.255.254", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fc00::1", false}, {"fd12:3456::1", false},
		{"0.0.0.0", false}, {"::", false}, {"224.0.0.1", false}, {"ff02::1", false}, {"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false}, {"255.255.255.255", false},
		{"8.8.8.8", true}, {"172.32.0.1", true}, {"100.128.0.1", true}, {"2606:4700:4700::1111", true}, {"93.184.216.34", true},
	} {
		if got := publicAddress(netip.MustParseAddr(tc.ip)); got != tc.public {
			t.Errorf("publicAddress(%s) = %v, want %v", tc.ip, got, tc.public)
		}
	}
}
