// Package wiretest checks what a server emits against the published
// 2026-07-28 JSON Schema (the module's copy, mcp/testdata), for the
// tests of package mcp and of its extensions. The method and
// notification tables are string literals so that package mcp's own
// tests can import it without a cycle.
//
// It is imported only from _test.go files (as internal/testutil, whose
// test checks that).
package wiretest

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// schemaFile is the module's copy of the schema, from the module root.
const schemaFile = "mcp/testdata/schema-2026-07-28.json"

var (
	wireOnce   sync.Once
	wireRoot   *jsonschema.Schema
	wireErr    error
	wireMu     sync.Mutex
	wireByName = map[string]*jsonschema.Resolved{}
)

// loadSchema reads schemaFile from the module root: the first folder up
// from the test's working directory that has a go.mod.
func loadSchema() (*jsonschema.Schema, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			return nil, errors.New("no go.mod above the working directory")
		}
		dir = up
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(schemaFile)))
	if err != nil {
		return nil, err
	}
	root := new(jsonschema.Schema)
	if err := json.Unmarshal(b, root); err != nil {
		return nil, err
	}
	return root, nil
}

// Schema returns the 2026-07-28 schema definition def, resolved; it
// fails t when the schema cannot be loaded or has no such definition.
func Schema(t testing.TB, def string) *jsonschema.Resolved {
	t.Helper()
	wireOnce.Do(func() { wireRoot, wireErr = loadSchema() })
	if wireErr != nil {
		t.Fatalf("loading wire schema: %v", wireErr)
	}
	wireMu.Lock()
	defer wireMu.Unlock()
	if r := wireByName[def]; r != nil {
		return r
	}
	if wireRoot.Defs[def] == nil {
		t.Fatalf("no $defs/%s in the wire schema", def)
	}
	s := &jsonschema.Schema{Schema: wireRoot.Schema, Ref: "#/$defs/" + def, Defs: wireRoot.Defs}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving %s: %v", def, err)
	}
	wireByName[def] = r
	return r
}

// responseDefs maps a method to the schema of its success response.
var responseDefs = map[string]string{
	"server/discover":          "DiscoverResultResponse",
	"tools/list":               "ListToolsResultResponse",
	"tools/call":               "CallToolResultResponse",
	"prompts/list":             "ListPromptsResultResponse",
	"prompts/get":              "GetPromptResultResponse",
	"resources/list":           "ListResourcesResultResponse",
	"resources/templates/list": "ListResourceTemplatesResultResponse",
	"resources/read":           "ReadResourceResultResponse",
	"completion/complete":      "CompleteResultResponse",
}

// notificationDefs maps a notification method to its schema.
var notificationDefs = map[string]string{
	"notifications/progress":                   "ProgressNotification",
	"notifications/message":                    "LoggingMessageNotification",
	"notifications/tools/list_changed":         "ToolListChangedNotification",
	"notifications/prompts/list_changed":       "PromptListChangedNotification",
	"notifications/resources/list_changed":     "ResourceListChangedNotification",
	"notifications/resources/updated":          "ResourceUpdatedNotification",
	"notifications/subscriptions/acknowledged": "SubscriptionsAcknowledgedNotification",
	"notifications/cancelled":                  "CancelledNotification",
}

// CheckWire validates one message the server emitted, answering a
// request of method (empty for notifications), against the wire schema,
// failing t when it does not match.
func CheckWire(t testing.TB, method string, msg []byte) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(msg, &v); err != nil {
		t.Fatalf("server emitted invalid JSON %q: %v", msg, err)
	}
	var def string
	switch {
	case v["method"] != nil:
		def = notificationDefs[v["method"].(string)]
		if def == "" {
			t.Fatalf("server emitted a message with unexpected method: %s", msg)
		}
	case v["error"] != nil:
		def = "JSONRPCErrorResponse"
		code, _ := v["error"].(map[string]any)["code"].(float64)
		switch int(code) {
		case jsonrpc.CodeHeaderMismatch:
			def = "HeaderMismatchError"
		case jsonrpc.CodeMissingRequiredCapability:
			def = "MissingRequiredClientCapabilityError"
		case jsonrpc.CodeUnsupportedProtocolVersion:
			def = "UnsupportedProtocolVersionError"
		}
	default:
		def = responseDefs[method]
		if def == "" {
			def = "JSONRPCResultResponse"
		}
		res, _ := v["result"].(map[string]any)
		if res == nil || res["resultType"] == nil {
			t.Fatalf("result without resultType: %s", msg)
		}
		if method == "subscriptions/listen" {
			def = "JSONRPCResultResponse"
			if err := Schema(t, "SubscriptionsListenResult").Validate(res); err != nil {
				t.Fatalf("listen result does not match the schema: %v\n%s", err, msg)
			}
		}
	}
	if err := Schema(t, def).Validate(v); err != nil {
		t.Fatalf("message does not match %s: %v\n%s", def, err, msg)
	}
}

// SplitMessages returns the JSON-RPC messages of an HTTP response body
// of Content-Type ct: every data event of an SSE stream, else the body
// itself (none when it is empty).
func SplitMessages(ct string, body []byte) [][]byte {
	if strings.HasPrefix(ct, "text/event-stream") {
		var out [][]byte
		sc := bufio.NewScanner(strings.NewReader(string(body)))
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				out = append(out, []byte(d))
			}
		}
		return out
	}
	if len(body) == 0 {
		return nil
	}
	return [][]byte{body}
}
