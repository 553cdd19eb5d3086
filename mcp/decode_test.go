package mcp

import "testing"

// benchNestedBody is a tools/call with nested arguments, the case the
// argument checks walk furthest.
var benchNestedBody = []byte(req(1, MethodToolsCall, `"name":"echo","arguments":{"text":"hello","opts":{"zone":"b","tags":["x","y"],"limits":{"cpu":2,"mem":"4Gi"}},"items":[{"id":1,"name":"a"},{"id":2,"name":"b"}]}`))

func BenchmarkDecodeToolCall(b *testing.B) {
	s := benchServer()
	for _, bc := range []struct {
		name string
		body []byte
	}{{"small", benchBody}, {"nested", benchNestedBody}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, f := s.decodeCall(bc.body); f != nil {
					b.Fatal(f.err)
				}
			}
		})
	}
}
