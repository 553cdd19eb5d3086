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
// key and white space dropped, via the JSON-RPC scanner; dup reports an
// object repeating a name as encoding/json decodes names.
func referenceCanonical(v []byte) (out []byte, ok, dup bool) {
	if !json.Valid(v) {
		return nil, false, false
	}
	out = refCanon(nil, jsonrpc.TrimSpace(v), &dup)
	return out, !dup, dup
}

func refCanon(dst, v []byte, dup *bool) []byte {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindObject:
		type kv struct{ k, v []byte }
		var ms []kv
		names := map[string]bool{}
		_ = jsonrpc.Fields(v, func(k, val []byte) error {
			var name string
			_ = json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &name)
			if names[name] {
				*dup = true
			}
			names[name] = true
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
			dst = refCanon(dst, jsonrpc.TrimSpace(m.v), dup)
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
			dst = refCanon(dst, jsonrpc.TrimSpace(e), dup)
			return nil
		})
		return append(dst, ']')
	}
	return append(dst, v...)
}

var canonicalSeeds = []string{
	`{}`, ` { } `, `[]`, `null`, `true`, `false`, `0`, `-0.5e+3`, `1E9`, `"a\"b\\c\/\b\f\n\r\t\u00e9"`,
	`{"b":1,"a":2}`, `{"a":1,"a":2,"A":0}`, `{"a":1,"A":0}`, `{"a!":1,"a":2}`,
	`{"region":"us","\u0072egion":"eu"}`, `{"\u0072egion":"eu","region":"us"}`, `{"a":{"b":1,"c":{"b":2},"b":3}}`,
	`[{"x":1},{"x":2}]`, `{"a":1,"b":{"a":2}}`, "{\"a\xff\":1,\"a\xfe\":2}", `{"\ud800":1,"\udfff":2}`, `{"\u00e9":1,"é":2}`,
	`{"z":1,"y":2,"z":3}`, `{"paramſ":1,"params":2}`, `{"\u212Aind":1,"kind":2}`, `{ "z" : [ 3 , { "y" : null , "x" : true } ] , "m" : "\ud800" }`,
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
	want, wok, dup := referenceCanonical(v)
	got, err := AppendCanonical([]byte("prefix"), v)
	if (err == nil) != wok {
		t.Fatalf("%.80q: valid=%v, reference=%v (duplicate=%v)", v, err == nil, wok, dup)
	}
	if dup && err != ErrDuplicateMember {
		t.Fatalf("%.80q: %v, want ErrDuplicateMember", v, err)
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

// TestOneDigestOneMeaning: arguments repeating a member have no digest,
// so a state minted for {"region":"us","\u0072egion":"eu"} (which
// encoding/json reads as region=eu) cannot be presented with its
// reordering (read as region=us): both texts are refused.
func TestOneDigestOneMeaning(t *testing.T) {
	for _, args := range []string{
		`{"region":"us","\u0072egion":"eu"}`,
		`{"\u0072egion":"eu","region":"us"}`,
		`{"region":"us","region":"eu"}`,
		`{"opts":{"zone":"a","zone":"b"}}`,
		`[{"k":1,"\u006b":2}]`,
		"{\"a\xff\":1,\"a\xfe\":2}",
	} {
		if d, err := ArgumentsDigest([]byte(args)); err != ErrDuplicateMember {
			t.Errorf("ArgumentsDigest(%s) = %q, %v; want ErrDuplicateMember", args, d, err)
		}
	}
	// Distinct names stay distinct, also when they fold together: their
	// meaning does not depend on member order.
	a, err1 := ArgumentsDigest([]byte(`{"region":"us","REGION":"eu"}`))
	b, err2 := ArgumentsDigest([]byte(`{"REGION":"eu","region":"us"}`))
	if err1 != nil || err2 != nil || a != b {
		t.Errorf("reordering distinct members: %q %v, %q %v", a, err1, b, err2)
	}
}
