package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// TestLegacyToolResultBytesAreEncodingJSONs checks that the hand-written
// encoding of a tools/call result on a 2025-11-25 session
// (appendLegacyResult's fast path) writes exactly what encoding/json
// writes for the same result, whatever the result holds.
func TestLegacyToolResultBytesAreEncodingJSONs(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "t", Version: "1"}, nil)
	results := []*CallToolResult{
		TextResult("hello"),
		TextResult("<a> & \"q\" \\ \n\t\x01 é \u2028 bad\xff"),
		{Content: []Content{}},
		{Content: nil},
		{Content: []Content{nil}},
		{Content: []Content{&TextContent{Text: "x", Annotations: &Annotations{Priority: 0.5}}, &ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"}}},
		{Content: []Content{&TextContent{Text: "s"}}, StructuredContent: map[string]any{"n": 1, "s": "<b>"}, IsError: true},
		{Content: []Content{&TextContent{Text: "m"}}, Meta: Meta{"k": "v"}},
		{Content: []Content{&TextContent{Text: "m"}}, Meta: Meta{}},
	}
	for i, r := range results {
		got, gotErr := s.appendLegacyResult([]byte("prefix"), jsonrpc.IntID(7), r)
		var body bytes.Buffer
		enc := json.NewEncoder(&body)
		enc.SetEscapeHTML(false)
		wantErr := enc.Encode(r)
		if (gotErr != nil) != (wantErr != nil) {
			t.Errorf("result %d: error %v, encoding/json's %v", i, gotErr, wantErr)
			continue
		}
		if wantErr != nil {
			if string(got) != "prefix" {
				t.Errorf("result %d: %q left after the error", i, got)
			}
			continue
		}
		want := `prefix{"jsonrpc":"2.0","id":7,"result":` + string(bytes.TrimSuffix(body.Bytes(), []byte("\n"))) + `}`
		if string(got) != want {
			t.Errorf("result %d:\n got %s\nwant %s", i, got, want)
		}
	}
}
