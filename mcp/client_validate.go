package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
	schema "github.com/roundtrip-mcp/roundtrip/internal/jsonschema"
)

// Checking structured results against a tool's outputSchema. The
// client checks the structuredContent of every result that is not
// isError against the schema the tool had in the last tools/list the
// client read (ClientOptions.SkipOutputValidation turns that off); a
// server may check its own tools' results too (WithOutputValidation).
//
// A server's schema is untrusted: it is compiled and checked by
// internal/jsonschema, an engine with bounds on the schema (size,
// subschemas, nesting, patterns, only local $refs, no $ref cycle that
// does not descend into the value) and a step budget on every check, so
// that no schema can overflow the stack or cost exponential time (see
// docs/design/schemas.md). The same engine names where a refused value
// fails: a JSON pointer into structuredContent and a reason. For
// schemas inside the small subset that inference from Go types
// produces, the fast validator (internal/jsonschema.Fast) reads the raw bytes
// first, without decoding them, and only a value it refuses is decoded
// and checked again. A schema that does not compile leaves the tool's
// results unchecked (one warning logged); a check that runs out of its
// budget refuses the result (OutputValidationError, reason "the
// outputSchema is too costly to check ...").

// ErrInvalidOutput matches an *OutputValidationError.
var ErrInvalidOutput = errors.New("mcp: structured result does not match the outputSchema")

// OutputValidationError reports a tool result whose structuredContent
// does not match the tool's outputSchema (or is missing while the tool
// declares one).
type OutputValidationError struct {
	// Tool is the tool's name.
	Tool string
	// Pointer is the JSON pointer (RFC 6901) of the value that failed,
	// within structuredContent: "" for structuredContent itself,
	// "/items/0/price" for a member of an element.
	Pointer string
	// Reason says which rule the value breaks, or starts with "the
	// outputSchema is too costly to check" when the check ran out of
	// its step budget (the result could not be checked).
	Reason string
	// Result is the result as received, for a caller that wants it
	// anyway. Nil on the server.
	Result *CallToolResult
}

// Error names the tool, the pointer and the reason.
func (e *OutputValidationError) Error() string {
	return fmt.Sprintf("mcp: tool %q: structuredContent at %q does not match the outputSchema: %s", e.Tool, e.Pointer, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidOutput) true.
func (e *OutputValidationError) Is(target error) bool { return target == ErrInvalidOutput }

// toolOutputs are the output schemas a Client learned from tools/list,
// by tool name; n counts them, so that a call of a client that knows
// none takes no lock.
type toolOutputs struct {
	mu sync.RWMutex
	m  map[string]*toolOutput
	n  atomic.Int32
}

// toolOutput is one tool's output schema, compiled on first use.
type toolOutput struct {
	raw  []byte
	once sync.Once
	v    *outputValidator
	err  error
}

// learn records the output schema of a listed tool (nil: it has none).
func (o *toolOutputs) learn(name string, schema []byte) {
	has := jsonrpc.KindOf(schema) == jsonrpc.KindObject || jsonrpc.KindOf(schema) == jsonrpc.KindBool
	if !has && o.n.Load() == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.m[name]
	switch {
	case !has:
		if old != nil {
			delete(o.m, name)
			o.n.Add(-1)
		}
	case old != nil && bytes.Equal(old.raw, schema):
	default:
		if o.m == nil {
			o.m = map[string]*toolOutput{}
		}
		if old == nil {
			o.n.Add(1)
		}
		o.m[name] = &toolOutput{raw: bytes.Clone(schema)}
	}
}

func (o *toolOutputs) get(name string) *toolOutput {
	if o.n.Load() == 0 {
		return nil
	}
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.m[name]
}

// learnOutput records what a listed tool says of its results.
func (c *Client) learnOutput(t *Tool) {
	raw, _ := t.OutputSchema.(json.RawMessage)
	c.outputs.learn(t.Name, raw)
}

// checkOutput checks res, a result of tool name, against the tool's
// output schema when the client knows one.
func (c *Client) checkOutput(name string, res *CallToolResult) error {
	if c.opts.SkipOutputValidation || res.IsError {
		return nil
	}
	to := c.outputs.get(name)
	if to == nil {
		return nil
	}
	to.once.Do(func() {
		if to.v, to.err = compileOutputSchema(to.raw); to.err != nil {
			c.log.Warn("mcp: client: the outputSchema of a tool cannot be compiled; its results are not checked", "tool", name, "err", to.err)
		}
	})
	if to.v == nil {
		return nil
	}
	if ptr, reason, ok := checkStructured(to.v, res.StructuredContent); !ok {
		return &OutputValidationError{Tool: name, Pointer: ptr, Reason: reason, Result: res}
	}
	return nil
}

// outputValidator checks values against one schema.
type outputValidator struct {
	fast   *schema.Fast // nil when the schema leaves the fast subset
	schema *schema.Schema
}

// maxFastSchemaBytes bounds the schemas given a fast validator too
// (CompileFast decodes each level again; inferred schemas are far
// smaller).
const maxFastSchemaBytes = 64 << 10

// compileOutputSchema compiles raw (a JSON Schema) with the bounded
// engine of internal/jsonschema: remote $refs are never loaded, and a
// schema beyond its bounds, with a $ref cycle that does not descend into
// the value, or with keywords it does not check, does not compile.
func compileOutputSchema(raw []byte) (*outputValidator, error) {
	s, err := schema.Compile(raw, nil)
	if err != nil {
		return nil, err
	}
	v := &outputValidator{schema: s}
	if len(raw) <= maxFastSchemaBytes {
		v.fast = schema.CompileFast(raw)
	}
	return v, nil
}

// reasonTooCostly starts the reason of a check that ran out of its
// step budget: the result is refused, since it could not be checked.
const reasonTooCostly = "the outputSchema is too costly to check on this result"

// check reports whether the JSON value raw satisfies the schema, and
// when it does not, where and why. A check that runs out of its step
// budget fails at "" with reasonTooCostly.
func (v *outputValidator) check(raw []byte) (pointer, reason string, ok bool) {
	if v.fast != nil && v.fast.Valid(raw) {
		return "", "", true
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return "", "not valid JSON: " + err.Error(), false
	}
	f, _, err := v.schema.Check(generic)
	if err != nil {
		return "", reasonTooCostly + " (" + strings.TrimPrefix(err.Error(), "jsonschema: ") + ")", false
	}
	if f != nil {
		return f.Pointer, f.Reason, false
	}
	return "", "", true
}

// checkStructured checks a result's structuredContent (raw JSON, or a
// value to encode) against v.
func checkStructured(v *outputValidator, sc any) (pointer, reason string, ok bool) {
	var raw []byte
	switch x := sc.(type) {
	case nil:
		return "", "structuredContent is missing (the tool declares an outputSchema)", false
	case json.RawMessage:
		raw = x
	default:
		b, err := json.Marshal(sc)
		if err != nil {
			return "", "structuredContent does not encode: " + err.Error(), false
		}
		raw = b
	}
	return v.check(raw)
}
