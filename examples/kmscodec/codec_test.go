package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

func TestEnvelopeCodec(t *testing.T) {
	k := newKMS()
	dk, err := k.unwrap(k.wrapNewDataKey())
	if err != nil {
		t.Fatal(err)
	}
	c, err := newEnvelopeCodec(dk)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Seal([]byte("state"))
	if err != nil || !strings.HasPrefix(tok, prefix) {
		t.Fatalf("%q %v", tok, err)
	}
	if pt, err := c.Unseal(tok); err != nil || string(pt) != "state" {
		t.Fatalf("%q %v", pt, err)
	}
	for name, bad := range map[string]string{
		"upper-case hex": prefix + strings.ToUpper(tok[len(prefix):]),
		"flipped":        tok[:len(tok)-1] + map[bool]string{true: "0", false: "1"}[tok[len(tok)-1] != '0'],
		"other prefix":   "kms2." + tok[len(prefix):],
		"short":          prefix + "00",
	} {
		if _, err := c.Unseal(bad); !errors.Is(err, requeststate.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
