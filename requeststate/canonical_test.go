package requeststate

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// referenceCanonical is the straightforward definition the one-pass
// canonicalizer must agree with: json.Valid, then members sorted by raw
// key and white space dropped, via the JSON-RPC scanner.
func referenceCanonical(v []byte) ([]byte, bool) {
	if !json.Valid(v) {
		return nil, false
	}
	return refCanon(nil, jsonrpc.TrimSpace(v)), true
}

func refCanon(dst, v []byte) []byte {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindObject:
		type kv struct{ k, v []byte }
		var ms []kv
		_ = jsonrpc.Fields(v, func(k, val []byte) error {
			ms = append(ms, kv{k, val})
			return nil
		})
		slices.SortStableFunc(ms, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(append(append(dst, '"'), m.k...), '"', ':')
			dst = refCanon(dst, jsonrpc.TrimSpace(m.v))
		}
		return append(dst, '}')
	case jsonrpc.KindArray:
		dst = append(dst, '[')
		i := 0
		_ = jsonrpc.Elements(v, func(e []byte) error {
			if i > 0 {
				dst = append(dst, ',')
			}
			i++
			dst = refCanon(dst, jsonrpc.TrimSpace(e))
			return nil
		})
		return append(dst, ']')
	}
	return append(dst, v...)
}

var canonicalSeeds = []string{
	`{}`, ` { } `, `[]`, `null`, `true`, `false`, `0`, `-0.5e+3`, `1E9`, `"a\"b\\c\/\b\f\n\r\t\u00e9"`,
	`{"b":1,"a":2}`, `{"a":1,"a":2,"A":0}`, `{"a!":1,"a":2}`, `{ "z" : [ 3 , { "y" : null , "x" : true } ] , "m" : "\ud800" }`,
	`{"k":"\udfff"}`, `[1,[2,[3,{"c":{},"b":[]}]]]`, `{"a":1,}`, `[1,]`, `{"a"}`, `{"a":}`, `01`, `-`, `1.`, `1e`, `"\u12"`, `"\x"`,
	"\"\x01\"", "\"\xff\"", `tru`, `nul`, `{"a":1}x`, `[`, `{`, `"`, ``, ` `, `{"b":{"d":1,"c":2},"a":[{"f":1,"e":2}]}`,
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
}

func TestCanonicalMatchesReference(t *testing.T) {
	for _, s := range canonicalSeeds {
		checkCanonical(t, []byte(s))
	}
}

func checkCanonical(t *testing.T, v []byte) {
	t.Helper()
	want, wok := referenceCanonical(v)
	got, err := AppendCanonical([]byte("prefix"), v)
	if (err == nil) != wok {
		t.Fatalf("%.80q: valid=%v, json.Valid=%v", v, err == nil, wok)
	}
	if wok && string(got) != "prefix"+string(want) {
		t.Fatalf("%.80q: canonical %q, reference %q", v, got, want)
	}
	if !wok && string(got) != "prefix" {
		t.Fatalf("%.80q: rejected but wrote %q", v, got)
	}
}

func FuzzCanonical(f *testing.F) {
	for _, s := range canonicalSeeds {
		if len(s) < 1000 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) { checkCanonical(t, []byte(s)) })
}
