package webhooks

import (
	"errors"
	"net/netip"
	"testing"
)

func TestBlockedReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr, want string
	}{
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"100.64.0.1", "reserved"},
		{"169.254.169.254", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"fd00:ec2::254", "metadata"},
		{"100.100.100.200", "metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"0.1.2.3", "reserved"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"192.0.2.10", "reserved"},
		{"64:ff9b::7f00:1", "loopback"},   // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", "private"},     // NAT64 of 10.0.0.1
		{"2002:a9fe:a9fe::1", "metadata"}, // 6to4 of 169.254.169.254
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"2606:4700::1111", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		{"172.32.0.1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			t.Parallel()
			if got := blockedReason(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Fatalf("blockedReason(%s) = %q, want %q", tt.addr, got, tt.want)
			}
		})
	}
}

// The literal hosts refused when an endpoint is created; names are judged
// when the attempt connects.
func TestBlockedHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, want string
	}{
		{"localhost", "loopback"},
		{"LOCALHOST.", "loopback"},
		{"api.localhost", "loopback"},
		{"127.0.0.1", "loopback"},
		{"::1", "loopback"},
		{"169.254.169.254", "metadata"},
		{"example.com", ""},
		{"localhost.example.com", ""},
		{"93.184.216.34", ""},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			t.Parallel()
			if got := blockedHost(tt.host); got != tt.want {
				t.Fatalf("blockedHost(%q) = %q, want %q", tt.host, got, tt.want)
			}
		})
	}
}

// The dialer's Control function refuses the resolved address it is about
// to connect to, with an error that names it.
func TestGuardedControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		address string
		blocked bool
	}{
		{"127.0.0.1:80", true},
		{"[::1]:443", true},
		{"[fd00:ec2::254]:80", true},
		{"10.0.0.5:8080", true},
		{"93.184.216.34:443", false},
		{"[2606:4700::1111]:443", false},
		{"not-an-address", true},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			t.Parallel()
			err := guardedControl("tcp", tt.address, nil)
			var blocked *blockedAddrError
			if got := errors.As(err, &blocked); got != tt.blocked {
				t.Fatalf("guardedControl(%s) = %v, want blocked %v", tt.address, err, tt.blocked)
			}
		})
	}
}
