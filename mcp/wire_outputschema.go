package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	schema "github.com/roundtrip-mcp/roundtrip/internal/jsonschema"
)

// Checking structured results against a tool's outputSchema (shared
// layer; the client's schemas from tools/list are in client_validate.go,
// the server's check in typed.go). The client checks the structuredContent of every result that is not
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
