package mcp

import (
	"encoding/json"
	"reflect"
	"testing"
)

var metaSeeds = []string{
	`{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1"}}`,
	`{}`, `{"a":[1,2.5,-3e2,true,false,null,"x",{"b":[]}]}`, `{"a":1,"a":2}`,
	`{"k":"caf\u00e9"}`, `{"k":"café"}`, `{"k":"\ud800"}`, "{\"k\":\"\xff\"}",
	`{"n":01}`, `{"n":1e999}`, `{"n":-0}`, `{"n":1.}`, `{"n":.5}`, `{"n":0x10}`,
	`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":{"k":{"l":{"m":{"n":{"o":{"p":{"q":{"r":{"s":{"t":{"u":{"v":{"w":{"x":{"y":{"z":{"A":{"B":{"C":{"D":{"E":{"F":{"G":{}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}`,
	`{"a":1,}`, `{"a" 1}`, `{"a":tru}`, ` {"a":1} `, `{"a":1} x`, `[1]`, `null`,
}

// The fast decoder of _meta decodes exactly what encoding/json does,
// and fails where it fails.
func TestMetaIsDecodedAsEncodingJSONDecodesIt(t *testing.T) {
	t.Parallel()
	for _, s := range metaSeeds {
		checkMetaDecode(t, []byte(s))
	}
}

func FuzzDecodeOpenMeta(f *testing.F) {
	for _, s := range metaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkMetaDecode(t, b) })
}

func checkMetaDecode(t *testing.T, b []byte) {
	t.Helper()
	var want Meta
	werr := json.Unmarshal(b, &want)
	got, gerr := decodeOpenMeta(b)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: encoding/json error %v, decodeOpenMeta error %v", b, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeOpenMeta %#v, encoding/json %#v", b, got, want)
	}
}

func TestAllocsDecodeOpenMetaOfServerInfo(t *testing.T) {
	raw := []byte(`{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1"}}`)
	n := testing.AllocsPerRun(100, func() { _, _ = decodeOpenMeta(raw) })
	// two maps (measured: 3 allocations), two value strings and their
	// two boxes in any; encoding/json takes 12
	if n > 7 {
		t.Fatalf("decodeOpenMeta of serverInfo: %.0f allocations, want at most 7", n)
	}
}

func BenchmarkDecodeOpenMeta(b *testing.B) {
	raw := []byte(`{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1"}}`)
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = decodeOpenMeta(raw)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m Meta
			_ = json.Unmarshal(raw, &m)
		}
	})
}
