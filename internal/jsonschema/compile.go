// Package jsonschema compiles and checks JSON Schemas that come from
// someone the program does not trust (a server's outputSchema), with
// bounds on everything: the schema's size, its number of subschemas and
// their nesting, its regular expressions, and a step budget for every
// check. A schema whose $ref cycles without descending into the value
// (`{"$ref":"#"}`) is refused when compiled, and a check that would cost
// more than its budget (nested anyOf chains are exponential) ends with
// ErrTooCostly instead of running on. Nothing in it is recursive beyond
// what those bounds allow, so no schema and no value can overflow the
// stack or exhaust memory.
//
// It covers draft 2020-12's validation vocabulary and the older drafts'
// spellings (definitions, dependencies, items as an array with
// additionalItems): type, enum, const, the numeric bounds, multipleOf,
// minLength/maxLength (in code points), pattern (Go's RE2 syntax: a
// pattern Go cannot compile makes the schema refused), format (an
// annotation, not checked), prefixItems, items, contains,
// minContains/maxContains, minItems/maxItems, uniqueItems, properties,
// patternProperties, additionalProperties, required,
// minProperties/maxProperties, propertyNames, dependentRequired,
// dependentSchemas, allOf, anyOf, oneOf, not, if/then/else, $ref (local:
// JSON pointers, $anchor, $id of the same document), $defs and boolean
// schemas. Schemas that use unevaluatedProperties, unevaluatedItems,
// $dynamicRef or $recursiveRef are refused (ErrUnsupported).
//
// It knows nothing of MCP, like internal/jsonrpc.
package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
)

// Limits bound what Compile accepts and what a check may cost. A zero
// field takes the value of DefaultLimits.
type Limits struct {
	// SchemaBytes bounds the schema's encoded size.
	SchemaBytes int
	// Subschemas bounds the number of subschemas (every object or
	// boolean in a schema position, the root included).
	Subschemas int
	// Depth bounds how deeply subschemas nest within each other.
	Depth int
	// PatternBytes bounds one regular expression's source.
	PatternBytes int
	// PatternInsts bounds the compiled size (RE2 program instructions)
	// of all the schema's regular expressions together.
	PatternInsts int
	// Steps is the step budget of a check beyond its per-value share:
	// a check of a value of n nodes may take Steps + StepsPerNode*n
	// steps, at most MaxSteps. A step is one application of a subschema
	// to a value, or the equivalent work (a member compared by enum or
	// uniqueItems, a slice of a string matched by a pattern).
	Steps        int
	StepsPerNode int
	MaxSteps     int
	// EvalDepth bounds how many applications may nest (a deep value
	// under a recursive schema).
	EvalDepth int
}

// DefaultLimits are the bounds a zero Limits field stands for.
var DefaultLimits = Limits{
	SchemaBytes:  1 << 20,
	Subschemas:   20_000,
	Depth:        128,
	PatternBytes: 4096,
	PatternInsts: 100_000,
	Steps:        100_000,
	StepsPerNode: 64,
	MaxSteps:     4_000_000,
	EvalDepth:    4096,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	set := func(p *int, v int) {
		if *p <= 0 {
			*p = v
		}
	}
	set(&l.SchemaBytes, d.SchemaBytes)
	set(&l.Subschemas, d.Subschemas)
	set(&l.Depth, d.Depth)
	set(&l.PatternBytes, d.PatternBytes)
	set(&l.PatternInsts, d.PatternInsts)
	set(&l.Steps, d.Steps)
	set(&l.StepsPerNode, d.StepsPerNode)
	set(&l.MaxSteps, d.MaxSteps)
	set(&l.EvalDepth, d.EvalDepth)
	return l
}

var (
	// ErrTooLarge matches a compile error for a schema beyond Limits.
	ErrTooLarge = errors.New("jsonschema: the schema is too large")
	// ErrCycle matches a compile error for a $ref cycle that does not
	// descend into the value.
	ErrCycle = errors.New("jsonschema: the schema refers to itself without descending into the value")
	// ErrUnsupported matches a compile error for a keyword or $ref this
	// package does not check (so that it never gives a verdict it
	// cannot stand by).
	ErrUnsupported = errors.New("jsonschema: the schema uses what this checker does not support")
	// ErrInvalid matches a compile error for a schema that is not a
	// valid JSON Schema.
	ErrInvalid = errors.New("jsonschema: not a valid schema")
)

// Schema is a compiled schema, safe for concurrent checks.
type Schema struct {
	root *node
	lim  Limits
}

type patProp struct {
	re *pattern
	n  *node
}

type pattern struct {
	src   string
	re    *regexp.Regexp
	insts int
}

// node is one subschema.
type node struct {
	ptr          string // where it is in the schema document
	always       bool   // true, or {}-like with nothing to check
	never        bool   // false
	ref          *node
	refOnly      bool // draft-07: the siblings of $ref are ignored
	refStr       string
	refBase      *url.URL
	types        uint8
	typeNames    []string
	enum         []any
	hasEnum      bool
	hasConst     bool
	constV       any
	min, max     *float64
	exMin, exMax *float64
	multipleOf   *float64
	minLen       int
	maxLen       int
	pattern      *pattern
	prefix       []*node
	items        *node // items after prefix
	contains     *node
	minContains  int
	maxContains  int
	minItems     int
	maxItems     int
	unique       bool
	props        map[string]*node
	patProps     []patProp
	addl         *node
	required     []string
	minProps     int
	maxProps     int
	propNames    *node
	depReq       map[string][]string
	depReqKeys   []string
	depSchemas   map[string]*node
	depSchemaKey []string
	allOf        []*node
	anyOf        []*node
	oneOf        []*node
	not          *node
	ifN          *node
	thenN, elseN *node
}

const (
	tNull uint8 = 1 << iota
	tBool
	tInteger
	tNumber
	tString
	tArray
	tObject
)

var typeBits = map[string]uint8{"null": tNull, "boolean": tBool, "integer": tInteger, "number": tNumber, "string": tString, "array": tArray, "object": tObject}

type compiler struct {
	lim      Limits
	doc      any
	draft7   bool
	nodes    map[string]*node // by JSON pointer in the document
	ids      map[string]string
	anchors  map[string]string // resource URI + "#" + name -> pointer
	pending  []*node
	patterns map[string]*pattern
	insts    int
}

// Compile compiles raw, a JSON Schema, within lim (nil: DefaultLimits).
// It refuses (with an error matching ErrTooLarge, ErrCycle,
// ErrUnsupported or ErrInvalid) a schema beyond the limits, a $ref that
// is not local or does not resolve, a $ref cycle that does not pass
// through a keyword descending into the value, a pattern Go's regexp
// cannot compile, and the keywords the package does not check.
func Compile(raw []byte, lim *Limits) (*Schema, error) {
	var l Limits
	if lim != nil {
		l = *lim
	}
	l = l.withDefaults()
	if len(raw) > l.SchemaBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, len(raw), l.SchemaBytes)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c := &compiler{lim: l, doc: doc, nodes: map[string]*node{}, ids: map[string]string{}, anchors: map[string]string{}}
	base := &url.URL{}
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok && isDraft7(s) {
			c.draft7 = true
		}
		if id, ok := m["$id"].(string); ok {
			u, err := url.Parse(id)
			if err != nil {
				return nil, fmt.Errorf("%w: $id %q: %v", ErrInvalid, id, err)
			}
			u.Fragment, u.RawFragment = "", ""
			base = u
		}
	}
	c.ids[base.String()] = ""
	root, err := c.compile(doc, "", 0, base)
	if err != nil {
		return nil, err
	}
	for len(c.pending) > 0 {
		n := c.pending[len(c.pending)-1]
		c.pending = c.pending[:len(c.pending)-1]
		if n.ref, err = c.resolve(n); err != nil {
			return nil, err
		}
	}
	if err := c.cycles(root); err != nil {
		return nil, err
	}
	return &Schema{root: root, lim: l}, nil
}

func isDraft7(s string) bool {
	s = strings.TrimSuffix(strings.TrimSuffix(s, "#"), "/")
	return strings.HasSuffix(s, "/draft-07/schema") || strings.HasSuffix(s, "/draft-06/schema") || strings.HasSuffix(s, "/draft-04/schema")
}

func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func invalid(ptr, format string, args ...any) error {
	return fmt.Errorf("%w: at %q: %s", ErrInvalid, ptr, fmt.Sprintf(format, args...))
}

func (c *compiler) compile(v any, ptr string, depth int, base *url.URL) (*node, error) {
	if n, ok := c.nodes[ptr]; ok {
		return n, nil
	}
	if depth > c.lim.Depth {
		return nil, fmt.Errorf("%w: subschemas nest more than %d deep (at %q)", ErrTooLarge, c.lim.Depth, ptr)
	}
	if len(c.nodes) >= c.lim.Subschemas {
		return nil, fmt.Errorf("%w: more than %d subschemas", ErrTooLarge, c.lim.Subschemas)
	}
	n := &node{ptr: ptr, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, minProps: -1, maxProps: -1, minContains: 1, maxContains: -1}
	c.nodes[ptr] = n
	switch x := v.(type) {
	case bool:
		n.always, n.never = x, !x
		return n, nil
	case map[string]any:
		return n, c.object(n, x, ptr, depth, base)
	}
	return nil, invalid(ptr, "a schema must be an object or a boolean, not %s", typeName(v))
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	}
	return "an object"
}

func (c *compiler) object(n *node, m map[string]any, ptr string, depth int, base *url.URL) error {
	for _, k := range []string{"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"} {
		if _, ok := m[k]; ok {
			return fmt.Errorf("%w: %s (at %q)", ErrUnsupported, k, ptr)
		}
	}
	if id, ok := m["$id"].(string); ok && ptr != "" && !(c.draft7 && strings.HasPrefix(id, "#")) {
		u, err := url.Parse(id)
		if err != nil {
			return invalid(ptr, "$id %q: %v", id, err)
		}
		base = base.ResolveReference(u)
		base.Fragment, base.RawFragment = "", ""
		c.ids[base.String()] = ptr
	}
	if a, ok := m["$anchor"].(string); ok {
		c.anchors[base.String()+"#"+a] = ptr
	}
	if id, ok := m["$id"].(string); ok && c.draft7 && strings.HasPrefix(id, "#") {
		c.anchors[base.String()+id] = ptr
	}
	sub := func(k string, v any, p string) (*node, error) { return c.compile(v, p, depth+1, base) }
	child := func(k string) (*node, error) {
		v, ok := m[k]
		if !ok {
			return nil, nil
		}
		return sub(k, v, ptr+"/"+escapeToken(k))
	}
	list := func(k string) ([]*node, error) {
		v, ok := m[k]
		if !ok {
			return nil, nil
		}
		a, ok := v.([]any)
		if !ok || (len(a) == 0 && k != "prefixItems" && k != "items") {
			return nil, invalid(ptr, "%s must be a non-empty array of schemas", k)
		}
		out := make([]*node, len(a))
		for i, e := range a {
			s, err := sub(k, e, ptr+"/"+k+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = s
		}
		return out, nil
	}
	schemaMap := func(k string) (map[string]*node, error) {
		v, ok := m[k]
		if !ok {
			return nil, nil
		}
		mm, ok := v.(map[string]any)
		if !ok {
			return nil, invalid(ptr, "%s must be an object of schemas", k)
		}
		out := make(map[string]*node, len(mm))
		for name, e := range mm {
			s, err := sub(k, e, ptr+"/"+k+"/"+escapeToken(name))
			if err != nil {
				return nil, err
			}
			out[name] = s
		}
		return out, nil
	}
	number := func(k string) (*float64, error) {
		v, ok := m[k]
		if !ok {
			return nil, nil
		}
		f, ok := v.(float64)
		if !ok {
			return nil, invalid(ptr, "%s must be a number", k)
		}
		return &f, nil
	}
	count := func(k string, into *int) error {
		v, ok := m[k]
		if !ok {
			return nil
		}
		f, ok := v.(float64)
		if !ok || f < 0 || f != math.Trunc(f) {
			return invalid(ptr, "%s must be a non-negative integer", k)
		}
		*into = int(min(f, math.MaxInt32))
		return nil
	}
	var err error
	// Subschemas first, in a fixed order, so that the errors and the
	// subschema count do not depend on map order.
	for _, k := range []string{"$defs", "definitions"} {
		if _, err = schemaMap(k); err != nil {
			return err
		}
	}
	if r, ok := m["$ref"]; ok {
		s, ok := r.(string)
		if !ok {
			return invalid(ptr, "$ref must be a string")
		}
		n.refStr, n.refBase, n.refOnly = s, base, c.draft7
		c.pending = append(c.pending, n)
		if c.draft7 {
			return nil
		}
	}
	if n.props, err = schemaMap("properties"); err != nil {
		return err
	}
	pp, err := schemaMap("patternProperties")
	if err != nil {
		return err
	}
	for _, src := range sortedKeys(pp) {
		re, err := c.pattern(src, ptr)
		if err != nil {
			return err
		}
		n.patProps = append(n.patProps, patProp{re, pp[src]})
	}
	if n.addl, err = child("additionalProperties"); err != nil {
		return err
	}
	if n.propNames, err = child("propertyNames"); err != nil {
		return err
	}
	if n.depSchemas, err = schemaMap("dependentSchemas"); err != nil {
		return err
	}
	if v, ok := m["dependentRequired"]; ok {
		mm, ok := v.(map[string]any)
		if !ok {
			return invalid(ptr, "dependentRequired must be an object")
		}
		n.depReq = map[string][]string{}
		for k, e := range mm {
			if n.depReq[k], err = stringList(e, ptr, "dependentRequired"); err != nil {
				return err
			}
		}
	}
	if v, ok := m["dependencies"]; ok {
		mm, ok := v.(map[string]any)
		if !ok {
			return invalid(ptr, "dependencies must be an object")
		}
		for _, k := range sortedKeys(mm) {
			e := mm[k]
			if a, ok := e.([]any); ok {
				if n.depReq == nil {
					n.depReq = map[string][]string{}
				}
				if n.depReq[k], err = stringList(a, ptr, "dependencies"); err != nil {
					return err
				}
				continue
			}
			s, err := sub("dependencies", e, ptr+"/dependencies/"+escapeToken(k))
			if err != nil {
				return err
			}
			if n.depSchemas == nil {
				n.depSchemas = map[string]*node{}
			}
			n.depSchemas[k] = s
		}
	}
	n.depReqKeys, n.depSchemaKey = sortedKeys(n.depReq), sortedKeys(n.depSchemas)
	if v, ok := m["required"]; ok {
		if n.required, err = stringList(v, ptr, "required"); err != nil {
			return err
		}
	}
	// Arrays.
	if n.prefix, err = list("prefixItems"); err != nil {
		return err
	}
	if it, ok := m["items"]; ok {
		if a, ok := it.([]any); ok { // the tuple form of the older drafts
			if n.prefix, err = list("items"); err != nil {
				return err
			}
			_ = a
			if n.items, err = child("additionalItems"); err != nil {
				return err
			}
		} else if n.items, err = child("items"); err != nil {
			return err
		}
	}
	if n.contains, err = child("contains"); err != nil {
		return err
	}
	for k, p := range map[string]*int{"minLength": &n.minLen, "maxLength": &n.maxLen, "minItems": &n.minItems, "maxItems": &n.maxItems,
		"minProperties": &n.minProps, "maxProperties": &n.maxProps, "minContains": &n.minContains, "maxContains": &n.maxContains} {
		if err := count(k, p); err != nil {
			return err
		}
	}
	if v, ok := m["uniqueItems"]; ok {
		b, ok := v.(bool)
		if !ok {
			return invalid(ptr, "uniqueItems must be a boolean")
		}
		n.unique = b
	}
	// Logic.
	for k, into := range map[string]*[]*node{"allOf": &n.allOf, "anyOf": &n.anyOf, "oneOf": &n.oneOf} {
		if *into, err = list(k); err != nil {
			return err
		}
	}
	if n.not, err = child("not"); err != nil {
		return err
	}
	if n.ifN, err = child("if"); err != nil {
		return err
	}
	if n.thenN, err = child("then"); err != nil {
		return err
	}
	if n.elseN, err = child("else"); err != nil {
		return err
	}
	// Values.
	if v, ok := m["type"]; ok {
		var names []string
		switch t := v.(type) {
		case string:
			names = []string{t}
		case []any:
			for _, e := range t {
				s, ok := e.(string)
				if !ok {
					return invalid(ptr, "type must be a string or an array of strings")
				}
				names = append(names, s)
			}
		default:
			return invalid(ptr, "type must be a string or an array of strings")
		}
		for _, s := range names {
			b, ok := typeBits[s]
			if !ok {
				return invalid(ptr, "type %q is not a JSON Schema type", s)
			}
			n.types |= b
		}
		if len(names) == 0 {
			return invalid(ptr, "type must not be an empty array")
		}
		n.typeNames = names
	}
	if v, ok := m["enum"]; ok {
		a, ok := v.([]any)
		if !ok {
			return invalid(ptr, "enum must be an array")
		}
		n.enum, n.hasEnum = a, true
	}
	if v, ok := m["const"]; ok {
		n.constV, n.hasConst = v, true
	}
	for k, into := range map[string]**float64{"minimum": &n.min, "maximum": &n.max, "exclusiveMinimum": &n.exMin, "exclusiveMaximum": &n.exMax, "multipleOf": &n.multipleOf} {
		if *into, err = number(k); err != nil {
			return err
		}
	}
	if n.multipleOf != nil && *n.multipleOf <= 0 {
		return invalid(ptr, "multipleOf must be greater than 0")
	}
	if v, ok := m["pattern"]; ok {
		s, ok := v.(string)
		if !ok {
			return invalid(ptr, "pattern must be a string")
		}
		if n.pattern, err = c.pattern(s, ptr); err != nil {
			return err
		}
	}
	return nil
}

func stringList(v any, ptr, k string) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, invalid(ptr, "%s must be an array of strings", k)
	}
	out := make([]string, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			return nil, invalid(ptr, "%s must be an array of strings", k)
		}
		out[i] = s
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// pattern compiles a regular expression once per schema, within the
// limits on its source and on the compiled size of all of them.
func (c *compiler) pattern(src, ptr string) (*pattern, error) {
	if p, ok := c.patterns[src]; ok {
		return p, nil
	}
	if len(src) > c.lim.PatternBytes {
		return nil, fmt.Errorf("%w: a pattern of %d bytes at %q, more than %d", ErrTooLarge, len(src), ptr, c.lim.PatternBytes)
	}
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("%w: pattern %q at %q is not a regular expression Go's regexp (RE2) accepts: %v", ErrUnsupported, src, ptr, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, fmt.Errorf("%w: pattern %q at %q: %v", ErrUnsupported, src, ptr, err)
	}
	if c.insts += len(prog.Inst); c.insts > c.lim.PatternInsts {
		return nil, fmt.Errorf("%w: its patterns compile to more than %d instructions", ErrTooLarge, c.lim.PatternInsts)
	}
	r, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%w: pattern %q at %q is not a regular expression Go's regexp (RE2) accepts: %v", ErrUnsupported, src, ptr, err)
	}
	if c.patterns == nil {
		c.patterns = map[string]*pattern{}
	}
	p := &pattern{src: src, re: r, insts: len(prog.Inst)}
	c.patterns[src] = p
	return p, nil
}

// resolve finds the target of n's $ref: a JSON pointer, an $anchor or
// an $id within the same document. A pointer to a place that is not a
// known subschema is compiled on demand.
func (c *compiler) resolve(n *node) (*node, error) {
	u, err := url.Parse(n.refStr)
	if err != nil {
		return nil, invalid(n.ptr, "$ref %q: %v", n.refStr, err)
	}
	t := n.refBase.ResolveReference(u)
	frag := t.Fragment
	t.Fragment, t.RawFragment = "", ""
	resPtr, ok := c.ids[t.String()]
	if !ok {
		return nil, fmt.Errorf("%w: $ref %q at %q is not a reference within the schema (remote schemas are never loaded)", ErrUnsupported, n.refStr, n.ptr)
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		p, ok := c.anchors[t.String()+"#"+frag]
		if !ok {
			return nil, fmt.Errorf("%w: $ref %q at %q names no anchor of the schema", ErrUnsupported, n.refStr, n.ptr)
		}
		return c.nodes[p], nil
	}
	target := resPtr + frag
	if tn, ok := c.nodes[target]; ok {
		return tn, nil
	}
	v, ok := lookup(c.doc, target)
	if !ok {
		return nil, fmt.Errorf("%w: $ref %q at %q points at nothing in the schema", ErrUnsupported, n.refStr, n.ptr)
	}
	// A subschema reached only by a pointer is compiled now, one level
	// deeper than what refers to it (so that chains of such pointers
	// stay within the depth bound).
	return c.compile(v, target, strings.Count(target, "/"), n.refBase)
}

// lookup follows the JSON pointer p in doc.
func lookup(doc any, p string) (any, bool) {
	if p == "" {
		return doc, true
	}
	if p[0] != '/' {
		return nil, false
	}
	for _, tok := range strings.Split(p[1:], "/") {
		tok = unescapeToken(tok)
		switch x := doc.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			doc = x[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

// inPlace lists the subschemas n applies to the same value.
func (n *node) inPlace(out []*node) []*node {
	out = out[:0]
	if n.ref != nil {
		out = append(out, n.ref)
	}
	out = append(out, n.allOf...)
	out = append(out, n.anyOf...)
	out = append(out, n.oneOf...)
	for _, s := range []*node{n.not, n.ifN, n.thenN, n.elseN} {
		if s != nil {
			out = append(out, s)
		}
	}
	for _, k := range n.depSchemaKey {
		out = append(out, n.depSchemas[k])
	}
	return out
}

// cycles refuses a loop of subschemas applied to the same value (a loop
// through $ref, allOf, anyOf, oneOf, not, if/then/else or
// dependentSchemas that never steps into a member or an item): checking
// it would never end. It walks every subschema reachable in place from
// any other, iteratively.
func (c *compiler) cycles(root *node) error {
	const (
		white = iota
		grey
		black
	)
	color := make(map[*node]uint8, len(c.nodes))
	type frame struct {
		n    *node
		kids []*node
		i    int
	}
	for _, start := range c.nodes {
		if color[start] != white {
			continue
		}
		stack := []frame{{n: start, kids: start.inPlace(nil)}}
		color[start] = grey
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.i == len(f.kids) {
				color[f.n] = black
				stack = stack[:len(stack)-1]
				continue
			}
			k := f.kids[f.i]
			f.i++
			switch color[k] {
			case grey:
				return fmt.Errorf("%w: the subschema at %q applies itself to the same value (through %q)", ErrCycle, "#"+k.ptr, "#"+f.n.ptr)
			case white:
				color[k] = grey
				stack = append(stack, frame{n: k, kids: k.inPlace(nil)})
			}
		}
	}
	_ = root
	return nil
}
