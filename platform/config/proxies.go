package config

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads TRUSTED_PROXIES: comma-separated CIDR ranges
// (10.0.0.0/8, fd00::/8) or single addresses (a /32 or /128). Spaces around
// items are ignored; an empty value trusts no proxy. A range with host bits
// set (10.1.2.3/8) is read as its network (10.0.0.0/8). Every item that is
// neither is reported at once, naming it.
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var (
		out []netip.Prefix
		bad []string
	)
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			bad = append(bad, `an empty item (two commas in a row, or a trailing comma)`)
			continue
		}
		if strings.Contains(item, "/") {
			p, err := netip.ParsePrefix(item)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%q is not a CIDR range such as 10.0.0.0/8", item))
				continue
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil || a.Zone() != "" {
			bad = append(bad, fmt.Sprintf("%q is not a CIDR range such as 10.0.0.0/8 or an IP address", item))
			continue
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(bad, "; "))
	}
	return out, nil
}
