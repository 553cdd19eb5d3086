package gateway

import (
	"crypto/sha256"
	"encoding/base32"
	"net/url"
	"strings"
)

// DefaultSeparator joins an upstream's prefix and the name of one of its
// tools or prompts: "github" + "__" + "create_issue". Two underscores
// because the names models accept are ^[A-Za-z0-9_-]{1,64}$ (a dot is
// valid MCP but refused by some model APIs) and a single underscore is
// common inside names.
const DefaultSeparator = "__"

// MaxNameLength is the length no aggregated tool or prompt name exceeds.
const MaxNameLength = 64

// MetaKey is the _meta member the gateway adds to every tool, prompt,
// resource and resource template it exposes: an object with "upstream"
// (the upstream's Name) and "name" (the entry's original name, or its
// original URI for a resource whose URI was rewritten).
const MetaKey = "io.roundtrip/gateway"

// hashLen is the length of the hash suffix of a shortened name.
const hashLen = 8

var nameHash = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// safeName reports whether s is made only of [A-Za-z0-9_.-].
func safeName(s string) bool {
	for i := 0; i < len(s); i++ {
		if !safeByte(s[i]) {
			return false
		}
	}
	return true
}

func safeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// naturalName is prefix+sep+name when that is at most MaxNameLength
// bytes of [A-Za-z0-9_.-]; ok is false otherwise.
func naturalName(prefix, sep, name string) (string, bool) {
	n := prefix + sep + name
	return n, len(n) <= MaxNameLength && safeName(name) && name != ""
}

// hashedName is the shortened form of an entry's name: the natural name
// with bytes outside [A-Za-z0-9_.-] replaced by '_', cut so that "_"
// and an 8-letter hash of (upstream, original name) fit in
// MaxNameLength. It depends only on the upstream and the name, so the
// same entry gets the same name on every instance and every refresh.
func hashedName(upstream, prefix, sep, name string) string {
	sum := sha256.Sum256([]byte("gateway-name\x00" + upstream + "\x00" + name))
	h := nameHash.EncodeToString(sum[:])[:hashLen]
	b := []byte(prefix + sep + name)
	for i, c := range b {
		if !safeByte(c) {
			b[i] = '_'
		}
	}
	if keep := MaxNameLength - 1 - hashLen; len(b) > keep {
		b = b[:keep]
	}
	return string(b) + "_" + h
}

// entryKey names one upstream entry: its upstream and original name.
type entryKey struct{ upstream, name string }

// assignNames gives every entry its aggregated name: the natural name
// when it is valid and no other entry's natural name is the same, the
// hashed name otherwise (both entries of a collision are hashed, so
// which one came first does not matter). An entry whose hashed name
// still collides (a 40-bit hash collision) is left out.
func assignNames(entries []entryKey, prefixes map[string]string, sep string) map[entryKey]string {
	natural := make(map[entryKey]string, len(entries))
	count := make(map[string]int, len(entries))
	for _, e := range entries {
		n, ok := naturalName(prefixes[e.upstream], sep, e.name)
		if !ok {
			continue
		}
		natural[e] = n
		count[n]++
	}
	out := make(map[entryKey]string, len(entries))
	taken := make(map[string]bool, len(entries))
	for e, n := range natural {
		if count[n] == 1 {
			out[e] = n
			taken[n] = true
		}
	}
	for _, e := range entries {
		if _, ok := out[e]; ok {
			continue
		}
		h := hashedName(e.upstream, prefixes[e.upstream], sep, e.name)
		if taken[h] {
			continue
		}
		out[e] = h
		taken[h] = true
	}
	return out
}

// rewrittenURIScheme is the scheme of a resource URI the gateway rewrote
// because two upstreams expose the same URI:
// roundtrip-gateway://UPSTREAM/?uri=ORIGINAL (ORIGINAL query-escaped).
const rewrittenURIScheme = "roundtrip-gateway"

func rewriteURI(upstream, uri string) string {
	return rewrittenURIScheme + "://" + upstream + "/?uri=" + url.QueryEscape(uri)
}

// parseRewrittenURI reverses rewriteURI; ok is false for any other URI.
func parseRewrittenURI(s string) (upstream, uri string, ok bool) {
	rest, found := strings.CutPrefix(s, rewrittenURIScheme+"://")
	if !found {
		return "", "", false
	}
	upstream, q, found := strings.Cut(rest, "/?uri=")
	if !found || upstream == "" || !safeName(upstream) {
		return "", "", false
	}
	uri, err := url.QueryUnescape(q)
	if err != nil || uri == "" {
		return "", "", false
	}
	return upstream, uri, true
}
