// Package netaddr reads the address lists of command-line flags
// (-trusted-proxies of the everything-server and of the fleet example).
package netaddr

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParsePrefixes reads comma-separated CIDRs or bare IPs (a bare IP is its
// own /32 or /128); empty items are skipped.
func ParsePrefixes(v string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a CIDR nor an IP address", s)
		}
		a = a.Unmap()
		ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
	}
	return ps, nil
}
