// Package wiretest checks what a server emits against the published
// 2026-07-28 JSON Schema (the module's copy, mcp/testdata; Validate and
// SchemaOf take an earlier revision's copy there too), for the
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

// schemaFile is the module's copy of a revision's schema, from the
// module root.
func schemaFile(revision string) string { return "mcp/testdata/schema-" + revision + ".json" }

// wire is the modern revision, the one CheckWire and Schema use.
const wire = "2026-07-28"

type schemaSet struct {
	once   sync.Once
	root   *jsonschema.Schema
	err    error
	mu     sync.Mutex
	byName map[string]*jsonschema.Resolved
}

var (
	setsMu sync.Mutex
	sets   = map[string]*schemaSet{}
)

// loadSchema reads a revision's schema from the module root: the first
// folder up from the test's working directory that has a go.mod.
func loadSchema(revision string) (*jsonschema.Schema, error) {
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
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(schemaFile(revision))))
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
	return SchemaOf(t, wire, def)
}

// SchemaOf returns definition def of the published schema of revision
// (the module's copy in mcp/testdata), resolved; it fails t when the
// schema cannot be loaded or has no such definition.
func SchemaOf(t testing.TB, revision, def string) *jsonschema.Resolved {
	t.Helper()
	setsMu.Lock()
	set := sets[revision]
	if set == nil {
		set = &schemaSet{byName: map[string]*jsonschema.Resolved{}}
		sets[revision] = set
	}
	setsMu.Unlock()
	set.once.Do(func() { set.root, set.err = loadSchema(revision) })
	if set.err != nil {
		t.Fatalf("loading the %s schema: %v", revision, set.err)
	}
	set.mu.Lock()
	defer set.mu.Unlock()
	if r := set.byName[def]; r != nil {
		return r
	}
	if set.root.Defs[def] == nil {
		t.Fatalf("no $defs/%s in the %s schema", def, revision)
	}
	s := &jsonschema.Schema{Schema: set.root.Schema, Ref: "#/$defs/" + def, Defs: set.root.Defs}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving %s: %v", def, err)
	}
	set.byName[def] = r
	return r
}

// Validate checks msg against definition def of revision's schema and
// returns the mismatch (nil when it matches); it fails t when msg is not
// JSON or the definition cannot be had.
func Validate(t testing.TB, revision, def string, msg []byte) error {
	t.Helper()
	r := SchemaOf(t, revision, def)
	var v any
	if err := json.Unmarshal(msg, &v); err != nil {
		t.Fatalf("invalid JSON %q", msg)
	}
	return r.Validate(v)
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
