package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"

	"github.com/google/jsonschema-go/jsonschema"
)

// Checking structured results against a tool's outputSchema. The
// client checks the structuredContent of every result that is not
// isError against the schema the tool had in the last tools/list the
// client read (ClientOptions.SkipOutputValidation turns that off); a
// server may check its own tools' results too (WithOutputValidation).
//
// The verdict is the full validator's (github.com/google/jsonschema-go),
// or for schemas inside the small subset that inference from Go types
// produces, the fast validator's (fastschema.go), which is held to the
// same verdicts and reads the raw bytes without decoding them. Only
// when the verdict is "invalid" is the value decoded and walked again to
// name where it fails: a JSON pointer into structuredContent and a
// reason. That walk knows the common keywords (type, enum, const, the
// numeric, string, array and object bounds, properties,
// patternProperties, additionalProperties, items, prefixItems, required,
// local $ref, allOf, anyOf, oneOf, if/then/else); where the failure lies
// beyond what it knows, the pointer is that of the deepest value it
// could blame, and the reason the validator's own message.

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
	// Reason says which rule the value breaks.
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
	fast     *fastSchema // nil when the schema leaves the fast subset
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
}

// compileOutputSchema compiles raw (a JSON Schema). Remote $refs are
// never loaded: a schema that needs one does not compile.
func compileOutputSchema(raw []byte) (*outputValidator, error) {
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, err
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return &outputValidator{fast: compileFast(raw), schema: s, resolved: res}, nil
}

// check reports whether the JSON value raw satisfies the schema, and
// when it does not, where and why.
func (v *outputValidator) check(raw []byte) (pointer, reason string, ok bool) {
	if v.fast != nil && v.fast.valid(raw) {
		return "", "", true
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return "", "not valid JSON: " + err.Error(), false
	}
	verr := v.resolved.Validate(generic)
	if verr == nil {
		return "", "", true
	}
	l := &locator{root: v.schema}
	if f := l.find(v.schema, generic, "", 0); f != nil && f.reason != "" {
		return f.ptr, f.reason, false
	} else if f != nil {
		pointer = f.ptr
	}
	return pointer, validatorReason(verr), false
}

// validatorReason trims the schema-path prefixes of the validator's
// message ("validating root: validating /properties/a: ...").
func validatorReason(err error) string {
	msg := err.Error()
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			return msg
		}
		i := strings.Index(rest, ": ")
		if i < 0 {
			return msg
		}
		msg = rest[i+2:]
	}
}

// locator walks a value that failed validation along its schema to find
// the failing value. It only ever runs on a value the validator refused.
type locator struct {
	root *jsonschema.Schema
	re   map[string]*regexp.Regexp
}

// outputFailure is where a value fails: ptr always; reason empty when the
// walk found no rule it knows broken at or below ptr (the validator's
// message is used then).
type outputFailure struct{ ptr, reason string }

// maxLocateDepth bounds the walk (schemas and values may nest deeply,
// and local $refs may cycle).
const maxLocateDepth = 64

// find returns the first failure of v against s, or nil when the walk
// finds none.
func (l *locator) find(s *jsonschema.Schema, v any, ptr string, depth int) *outputFailure {
	if s == nil {
		return nil
	}
	if depth > maxLocateDepth {
		return &outputFailure{ptr: ptr}
	}
	if isFalseSchema(s) {
		return &outputFailure{ptr, "no value is allowed here (the schema is false)"}
	}
	if s.Ref != "" {
		if target := l.resolveRef(s.Ref); target != nil {
			if f := l.find(target, v, ptr, depth+1); f != nil {
				return f
			}
		}
	}
	if f := l.local(s, v, ptr); f != nil {
		return f
	}
	switch x := v.(type) {
	case map[string]any:
		if f := l.object(s, x, ptr, depth); f != nil {
			return f
		}
	case []any:
		if f := l.array(s, x, ptr, depth); f != nil {
			return f
		}
	}
	for _, sub := range s.AllOf {
		if f := l.find(sub, v, ptr, depth+1); f != nil {
			return f
		}
	}
	if len(s.AnyOf) > 0 && !l.anyValid(s.AnyOf, v, ptr, depth) {
		return l.alternatives("anyOf", s.AnyOf, v, ptr, depth)
	}
	if len(s.OneOf) > 0 && !l.anyValid(s.OneOf, v, ptr, depth) {
		return l.alternatives("oneOf", s.OneOf, v, ptr, depth)
	}
	if s.If != nil {
		branch := s.Else
		if l.find(s.If, v, ptr, depth+1) == nil {
			branch = s.Then
		}
		if f := l.find(branch, v, ptr, depth+1); f != nil {
			return f
		}
	}
	return nil
}

func (l *locator) anyValid(ss []*jsonschema.Schema, v any, ptr string, depth int) bool {
	for _, sub := range ss {
		if l.find(sub, v, ptr, depth+1) == nil {
			return true
		}
	}
	return false
}

// alternatives blames a value that matches none of several schemas:
// when only one of them accepts its type, its own failure; otherwise
// the value itself.
func (l *locator) alternatives(kw string, ss []*jsonschema.Schema, v any, ptr string, depth int) *outputFailure {
	var only *jsonschema.Schema
	n := 0
	for _, sub := range ss {
		if l.typeFailure(l.deref(sub), v) == "" {
			only = sub
			n++
		}
	}
	if n == 1 {
		return l.find(only, v, ptr, depth+1)
	}
	return &outputFailure{ptr, fmt.Sprintf("%s: the %s matches none of the %d alternatives", kw, jsonTypeName(v), len(ss))}
}

func (l *locator) deref(s *jsonschema.Schema) *jsonschema.Schema {
	for i := 0; s != nil && s.Ref != "" && i < 8; i++ {
		t := l.resolveRef(s.Ref)
		if t == nil {
			break
		}
		s = t
	}
	return s
}

// resolveRef finds a local reference: "#", "#/$defs/name",
// "#/definitions/name". Others are not followed.
func (l *locator) resolveRef(ref string) *jsonschema.Schema {
	if ref == "#" {
		return l.root
	}
	if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
		return l.root.Defs[unescapePointer(name)]
	}
	if name, ok := strings.CutPrefix(ref, "#/definitions/"); ok {
		return l.root.Definitions[unescapePointer(name)]
	}
	return nil
}

func isFalseSchema(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

// local checks the keywords that look at v alone.
func (l *locator) local(s *jsonschema.Schema, v any, ptr string) *outputFailure {
	if r := l.typeFailure(s, v); r != "" {
		return &outputFailure{ptr, r}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return sameJSON(e, v) }) {
		return &outputFailure{ptr, fmt.Sprintf("enum: %s is not one of the allowed values", clipValue(v))}
	}
	if s.Const != nil && !sameJSON(*s.Const, v) {
		return &outputFailure{ptr, fmt.Sprintf("const: %s is not the required value %s", clipValue(v), clipValue(*s.Const))}
	}
	switch x := v.(type) {
	case float64:
		return numberFailure(s, x, ptr)
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			return &outputFailure{ptr, fmt.Sprintf("minLength: %d characters, fewer than %d", n, *s.MinLength)}
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			return &outputFailure{ptr, fmt.Sprintf("maxLength: %d characters, more than %d", n, *s.MaxLength)}
		}
		if s.Pattern != "" {
			if re := l.regexp(s.Pattern); re != nil && !re.MatchString(x) {
				return &outputFailure{ptr, fmt.Sprintf("pattern: %s does not match %q", clipValue(x), s.Pattern)}
			}
		}
	}
	return nil
}

func (l *locator) regexp(p string) *regexp.Regexp {
	if re, ok := l.re[p]; ok {
		return re
	}
	re, _ := regexp.Compile(p)
	if l.re == nil {
		l.re = map[string]*regexp.Regexp{}
	}
	l.re[p] = re
	return re
}

func numberFailure(s *jsonschema.Schema, n float64, ptr string) *outputFailure {
	num := strconv.FormatFloat(n, 'g', -1, 64)
	bound := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch {
	case s.Minimum != nil && n < *s.Minimum:
		return &outputFailure{ptr, fmt.Sprintf("minimum: %s is less than %s", num, bound(*s.Minimum))}
	case s.Maximum != nil && n > *s.Maximum:
		return &outputFailure{ptr, fmt.Sprintf("maximum: %s is greater than %s", num, bound(*s.Maximum))}
	case s.ExclusiveMinimum != nil && n <= *s.ExclusiveMinimum:
		return &outputFailure{ptr, fmt.Sprintf("exclusiveMinimum: %s is not greater than %s", num, bound(*s.ExclusiveMinimum))}
	case s.ExclusiveMaximum != nil && n >= *s.ExclusiveMaximum:
		return &outputFailure{ptr, fmt.Sprintf("exclusiveMaximum: %s is not less than %s", num, bound(*s.ExclusiveMaximum))}
	case s.MultipleOf != nil && *s.MultipleOf > 0:
		if q := n / *s.MultipleOf; q != math.Trunc(q) {
			return &outputFailure{ptr, fmt.Sprintf("multipleOf: %s is not a multiple of %s", num, bound(*s.MultipleOf))}
		}
	}
	return nil
}

// typeFailure checks the type keyword ("" when v has an allowed type).
func (l *locator) typeFailure(s *jsonschema.Schema, v any) string {
	if s == nil {
		return ""
	}
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	if len(types) == 0 {
		return ""
	}
	got := jsonTypeName(v)
	for _, t := range types {
		if t == got || (t == "number" && got == "integer") {
			return ""
		}
	}
	if len(types) == 1 {
		return fmt.Sprintf("type: got %s, want %s", got, types[0])
	}
	return fmt.Sprintf("type: got %s, want one of %s", got, strings.Join(types, ", "))
}

// jsonTypeName is the JSON Schema type of a decoded value ("integer"
// for a number without a fraction).
func jsonTypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func (l *locator) object(s *jsonschema.Schema, obj map[string]any, ptr string, depth int) *outputFailure {
	var missing []string
	for _, r := range s.Required {
		if _, ok := obj[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return &outputFailure{ptr, fmt.Sprintf("required: missing %s", quoteList(missing))}
	}
	if s.MinProperties != nil && len(obj) < *s.MinProperties {
		return &outputFailure{ptr, fmt.Sprintf("minProperties: %d members, fewer than %d", len(obj), *s.MinProperties)}
	}
	if s.MaxProperties != nil && len(obj) > *s.MaxProperties {
		return &outputFailure{ptr, fmt.Sprintf("maxProperties: %d members, more than %d", len(obj), *s.MaxProperties)}
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		child := ptr + "/" + escapePointer(k)
		matched := false
		if sub, ok := s.Properties[k]; ok {
			matched = true
			if f := l.find(sub, obj[k], child, depth+1); f != nil {
				return f
			}
		}
		for p, sub := range s.PatternProperties {
			if re := l.regexp(p); re != nil && re.MatchString(k) {
				matched = true
				if f := l.find(sub, obj[k], child, depth+1); f != nil {
					return f
				}
			}
		}
		if !matched && s.AdditionalProperties != nil {
			if isFalseSchema(s.AdditionalProperties) {
				return &outputFailure{child, fmt.Sprintf("additionalProperties: member %q is not allowed", k)}
			}
			if f := l.find(s.AdditionalProperties, obj[k], child, depth+1); f != nil {
				return f
			}
		}
	}
	return nil
}

func (l *locator) array(s *jsonschema.Schema, arr []any, ptr string, depth int) *outputFailure {
	if s.MinItems != nil && len(arr) < *s.MinItems {
		return &outputFailure{ptr, fmt.Sprintf("minItems: %d items, fewer than %d", len(arr), *s.MinItems)}
	}
	if s.MaxItems != nil && len(arr) > *s.MaxItems {
		return &outputFailure{ptr, fmt.Sprintf("maxItems: %d items, more than %d", len(arr), *s.MaxItems)}
	}
	prefix := s.PrefixItems
	rest := s.Items
	if len(s.ItemsArray) > 0 { // draft-07 tuple form
		prefix, rest = s.ItemsArray, s.AdditionalItems
	}
	for i, e := range arr {
		sub := rest
		if i < len(prefix) {
			sub = prefix[i]
		}
		if sub == nil {
			continue
		}
		if f := l.find(sub, e, ptr+"/"+strconv.Itoa(i), depth+1); f != nil {
			return f
		}
	}
	if s.UniqueItems {
		for i := range arr {
			for j := i + 1; j < len(arr); j++ {
				if sameJSON(arr[i], arr[j]) {
					return &outputFailure{ptr + "/" + strconv.Itoa(j), fmt.Sprintf("uniqueItems: items %d and %d are equal", i, j)}
				}
			}
		}
	}
	return nil
}

// sameJSON compares decoded JSON values (numbers by value).
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case int:
		a = float64(x)
	case int64:
		a = float64(x)
	}
	switch x := b.(type) {
	case int:
		b = float64(x)
	case int64:
		b = float64(x)
	}
	return reflect.DeepEqual(a, b)
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// clipValue writes a value for a message, at most 64 bytes of it.
func clipValue(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 64 {
		return string(b[:61]) + "..."
	}
	return string(b)
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
