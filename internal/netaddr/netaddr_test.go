package netaddr

import (
	"net/netip"
	"slices"
	"testing"
)

func TestParsePrefixesReadsCIDRsAndBareIPs(t *testing.T) {
	got, err := ParsePrefixes(" 10.0.0.0/8, 192.168.1.7 ,,::ffff:127.0.0.1, 2001:db8::1/64")
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.1.7/32"),
		netip.MustParsePrefix("127.0.0.1/32"),
		netip.MustParsePrefix("2001:db8::/64"),
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := ParsePrefixes("10.0.0.0/8,nginx"); err == nil {
		t.Error("a name that is no address was taken")
	}
}
