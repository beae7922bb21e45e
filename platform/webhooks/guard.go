package webhooks

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// Addresses a webhook is never sent to (unless Config.AllowPrivate): an
// organization must not be able to make the platform call its own
// network, its neighbours or a cloud metadata service. netip's predicates
// (IsLoopback, IsPrivate, IsLinkLocalUnicast, IsMulticast, IsUnspecified)
// name most of them; these are the rest.
var (
	// metadataAddrs are cloud instance metadata services (AWS, GCP and
	// Azure on IPv4; AWS on IPv6; Alibaba Cloud).
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"),
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
	}
	// reservedPrefixes are special-purpose ranges the predicates do not
	// name, none of which is a public server's.
	reservedPrefixes = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
		netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier-grade NAT)
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
		netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
		netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
		netip.MustParsePrefix("100::/64"),        // discard-only
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
		netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	}
	// nat64 and sixToFour embed an IPv4 address, which is judged instead.
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// blockedReason returns what kind of address ip is when webhooks must not
// be sent to it ("loopback", "private", "link-local", "metadata",
// "multicast", "unspecified" or "reserved"), else "". IPv4 addresses written as IPv6 (mapped, NAT64, 6to4) are judged
// by their IPv4 address.
func blockedReason(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if v4, ok := embeddedIPv4(ip); ok {
		if r := blockedReason(v4); r != "" {
			return r
		}
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return "metadata"
		}
	}
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, p := range reservedPrefixes {
		if p.Contains(ip) {
			return "reserved"
		}
	}
	return ""
}

// embeddedIPv4 returns the IPv4 address inside a NAT64 (64:ff9b::/96) or
// 6to4 (2002::/16) address.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	if !ip.Is6() {
		return netip.Addr{}, false
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// blockedHost reports why a URL's host may not be an endpoint's, judged
// before any lookup: "localhost" (and its subdomains), or a literal
// address blockedReason refuses. A name is judged again on every address
// it resolves to, when the attempt connects (guardedDial).
func blockedHost(host string) string {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return "loopback"
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return blockedReason(ip)
	}
	return ""
}

// blockedAddrError is an attempt's refusal to connect to an address.
type blockedAddrError struct {
	addr   string
	reason string
}

func (e *blockedAddrError) Error() string {
	return "refused to connect to " + e.addr + ": webhooks are not sent to " + e.reason + " addresses"
}

// guardedControl is the dialer's Control function: it runs after the name
// was resolved, on the address about to be connected to, so a name that
// resolves (or is re-bound) to a refused address is refused too.
func guardedControl(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return &blockedAddrError{addr: address, reason: "unparseable"}
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return &blockedAddrError{addr: host, reason: "unparseable"}
	}
	if r := blockedReason(ip); r != "" {
		return &blockedAddrError{addr: ip.String(), reason: r}
	}
	return nil
}

// newClient returns the client of webhook attempts: the dialer refuses
// blocked addresses (unless cfg.AllowPrivate), no proxy is used (a proxy
// would connect for us, past the check), redirects are not followed (the
// 3xx is the answer, a failed attempt), and every attempt is bounded by
// cfg.Timeout.
func newClient(cfg Config) *http.Client {
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = guardedControl
	}
	var rt http.RoundTripper = &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   cfg.MaxInFlight,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		ExpectContinueTimeout: time.Second,
	}
	if cfg.WrapTransport != nil {
		rt = cfg.WrapTransport(rt)
	}
	return &http.Client{
		Transport: rt,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
