package mcp

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// The seams for a feature an earlier revision defines itself
// (MethodSpec.Core and Capabilities, ToolOption.WithListing,
// CallToolRequest.Params, ClientCapabilities.Raw): served on that
// revision's sessions only, without declaring the extension there.
func TestCoreMethodsAndListingServeTheirRevisionOnly(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "core", Version: "1"}, nil)
	var gotParams, gotCaps string
	s.AddMethod(&MethodSpec{Name: "things/get", Extension: "com.example/things", Core: "2025-11-25",
		Capabilities: json.RawMessage(`{"things":{"get":{}}}`)},
		func(ctx context.Context, req *ExtensionRequest) (Result, error) {
			return &ExtensionResult{Value: map[string]string{"thing": "one"}}, nil
		})
	s.AddTool(&Tool{Name: "t"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		gotParams, gotCaps = string(r.Params), string(r.Meta.ClientCapabilities.Raw)
		return TextResult("ok"), nil
	}, WrapTool(func(h ToolHandler) ToolHandler { return h }).WithListing("2025-11-25", json.RawMessage(`{"execution":{"taskSupport":"optional"}}`)))
	ts := httptest.NewServer(NewHTTPHandler(s, nil))
	t.Cleanup(ts.Close)

	c := newLegacyClientAt(t, ts.URL, "2025-11-25", `{"things":{"x":1}}`)
	caps := c.lastInit["capabilities"].(map[string]any)
	if _, ok := caps["things"]; !ok || caps["extensions"] != nil {
		t.Fatalf("2025-11-25 capabilities: %v", caps)
	}
	if r := c.request("things/get", ""); r["result"] == nil || r["result"].(map[string]any)["thing"] != "one" {
		t.Fatalf("things/get on 2025-11-25: %v", r)
	}
	list, _ := json.Marshal(c.request("tools/list", ""))
	if !strings.Contains(string(list), `"execution":{"taskSupport":"optional"}`) {
		t.Fatalf("tools/list on 2025-11-25: %s", list)
	}
	if r := c.request("tools/call", `{"name":"t","arguments":{},"task":{"ttl":5}}`); r["result"] == nil {
		t.Fatalf("tools/call: %v", r)
	}
	if !strings.Contains(gotParams, `"task":{"ttl":5}`) || gotCaps != `{"things":{"x":1}}` {
		t.Fatalf("the handler saw params %s and capabilities %s", gotParams, gotCaps)
	}

	old := newLegacyClientAt(t, ts.URL, "2025-06-18", `{}`)
	if caps := old.lastInit["capabilities"].(map[string]any); caps["things"] != nil || caps["extensions"] != nil {
		t.Fatalf("2025-06-18 capabilities: %v", caps)
	}
	if r := old.request("things/get", ""); r["error"] == nil || r["error"].(map[string]any)["code"] != float64(CodeMethodNotFound) {
		t.Fatalf("things/get on 2025-06-18: %v", r)
	}
	list, _ = json.Marshal(old.request("tools/list", ""))
	if strings.Contains(string(list), `"execution"`) {
		t.Fatalf("tools/list on 2025-06-18: %s", list)
	}
}

// AddMethod refuses a Core that is not an earlier revision, and
// Capabilities without a Core or that are not an object.
func TestCoreMethodSpecIsChecked(t *testing.T) {
	t.Parallel()
	h := func(context.Context, *ExtensionRequest) (Result, error) { return EmptyResult{}, nil }
	for _, sp := range []*MethodSpec{
		{Name: "a/b", Extension: "com.example/x", Core: "2099-01-01"},
		{Name: "a/c", Extension: "com.example/x", Capabilities: json.RawMessage(`{"a":{}}`)},
		{Name: "a/d", Extension: "com.example/x", Core: "2025-11-25", Capabilities: json.RawMessage(`[]`)},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AddMethod accepted %+v", sp)
				}
			}()
			NewServer(Implementation{Name: "x", Version: "1"}, nil).AddMethod(sp, h)
		}()
	}
}
