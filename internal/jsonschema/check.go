package jsonschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// ErrTooCostly matches the error of a check that ran out of its step
// budget (or nested applications beyond Limits.EvalDepth): the schema is
// too costly to check on that value, and no verdict was reached.
var ErrTooCostly = errors.New("jsonschema: the schema is too costly to check on this value")

// Failure is where a value breaks a schema and why.
type Failure struct {
	// Pointer is the JSON pointer (RFC 6901) of the failing value
	// within the value checked ("" for the value itself).
	Pointer string
	// Reason names the keyword broken and how ("type: got string, want
	// number").
	Reason string
}

// Check checks v, a value as encoding/json decodes into an any
// (map[string]any, []any, float64 or json.Number, string, bool, nil;
// int and int64 are taken as numbers too), against s. It returns nil,
// nil when v satisfies s; the first failure found when it does not
// (properties are visited in sorted order, so the failure does not
// depend on map order); or an error matching ErrTooCostly when the step
// budget ran out first. steps is the number of steps taken.
func (s *Schema) Check(v any) (f *Failure, steps int, err error) {
	n := countNodes(v)
	budget := s.lim.MaxSteps
	if n < (budget-s.lim.Steps)/s.lim.StepsPerNode {
		budget = s.lim.Steps + n*s.lim.StepsPerNode
	}
	c := &checker{budget: budget, maxDepth: s.lim.EvalDepth}
	fl := c.eval(s.root, v, nil)
	switch {
	case c.deep:
		return nil, c.steps, fmt.Errorf("%w: the value nests more than %d applications deep", ErrTooCostly, c.maxDepth)
	case c.over:
		return nil, c.steps, fmt.Errorf("%w: more than %d steps", ErrTooCostly, budget)
	case fl != nil:
		return &Failure{Pointer: fl.at.pointer(), Reason: fl.reason}, c.steps, nil
	}
	return nil, c.steps, nil
}

// countNodes counts the values in v, without recursion.
func countNodes(v any) int {
	n := 0
	stack := []any{v}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n++
		switch y := x.(type) {
		case map[string]any:
			for _, e := range y {
				stack = append(stack, e)
			}
		case []any:
			stack = append(stack, y...)
		}
	}
	return n
}

// loc is a place in the value, as a chain to the root (nil), so that
// the pointer is only written for the failure reported.
type loc struct {
	up    *loc
	key   string
	idx   int
	isKey bool
}

func (l *loc) pointer() string {
	if l == nil {
		return ""
	}
	var parts []string
	for ; l != nil; l = l.up {
		if l.isKey {
			parts = append(parts, escapeToken(l.key))
		} else {
			parts = append(parts, strconv.Itoa(l.idx))
		}
	}
	slices.Reverse(parts)
	return "/" + strings.Join(parts, "/")
}

type fail struct {
	at     *loc
	reason string
}

var (
	overFail  = &fail{reason: "the check ran out of steps"}
	quietFail = &fail{reason: "(not written)"}
)

type checker struct {
	steps, budget int
	depth         int
	maxDepth      int
	over, deep    bool
	// quiet > 0 while only the verdict matters (under not, if,
	// contains, and the alternatives of anyOf and oneOf): failures are
	// not written.
	quiet int
}

// fail is a failure at at, its reason written only when it may be
// reported.
func (c *checker) fail(at *loc, reason func() string) *fail {
	if c.quiet > 0 {
		return quietFail
	}
	return &fail{at, reason()}
}

// verdict applies n to v for its verdict alone.
func (c *checker) verdict(n *node, v any, at *loc) bool {
	c.quiet++
	f := c.eval(n, v, at)
	c.quiet--
	return f == nil
}

// step charges n steps; false once the budget is spent.
func (c *checker) step(n int) bool {
	c.steps += n
	if c.steps > c.budget {
		c.over = true
	}
	return !c.over
}

func (c *checker) eval(n *node, v any, at *loc) *fail {
	if c.over || !c.step(1) {
		return overFail
	}
	if n.always {
		return nil
	}
	if n.never {
		return c.fail(at, func() string { return "no value is allowed here (the schema is false)" })
	}
	if !c.enter() {
		return overFail
	}
	f := c.evalNode(n, v, at)
	c.leave()
	return f
}

// enter counts one more nested application (or level of a value
// compared or encoded); false, ending the check, past maxDepth.
func (c *checker) enter() bool {
	if c.depth >= c.maxDepth {
		c.over, c.deep = true, true
		return false
	}
	c.depth++
	return true
}

func (c *checker) leave() { c.depth-- }

func (c *checker) evalNode(n *node, v any, at *loc) *fail {
	if n.ref != nil {
		if f := c.eval(n.ref, v, at); f != nil {
			return f
		}
		if n.refOnly {
			return nil
		}
	}
	if f := c.local(n, v, at); f != nil {
		return f
	}
	switch x := v.(type) {
	case map[string]any:
		if f := c.object(n, x, at); f != nil {
			return f
		}
	case []any:
		if f := c.array(n, x, at); f != nil {
			return f
		}
	}
	for _, s := range n.allOf {
		if f := c.eval(s, v, at); f != nil {
			return f
		}
	}
	if len(n.anyOf) > 0 {
		if f := c.alternatives("anyOf", n.anyOf, v, at, false); f != nil {
			return f
		}
	}
	if len(n.oneOf) > 0 {
		if f := c.alternatives("oneOf", n.oneOf, v, at, true); f != nil {
			return f
		}
	}
	if n.not != nil {
		if c.verdict(n.not, v, at) {
			return c.fail(at, func() string { return "not: the value matches the schema it must not match" })
		}
		if c.over {
			return overFail
		}
	}
	if n.ifN != nil {
		branch := n.elseN
		if c.verdict(n.ifN, v, at) {
			branch = n.thenN
		}
		if c.over {
			return overFail
		}
		if branch != nil {
			if f := c.eval(branch, v, at); f != nil {
				return f
			}
		}
	}
	return nil
}

// alternatives checks anyOf (one must match) or oneOf (exactly one). A
// value that matches none is blamed on the only alternative that
// accepts its type when there is one (its own failure, deeper in the
// value), otherwise on the value itself.
func (c *checker) alternatives(kw string, ss []*node, v any, at *loc, exactly bool) *fail {
	var only *node
	accepting := 0
	matched := -1
	for i, s := range ss {
		ok := c.verdict(s, v, at)
		if c.over {
			return overFail
		}
		if ok {
			if !exactly {
				return nil
			}
			if matched >= 0 {
				return c.fail(at, func() string {
					return fmt.Sprintf("oneOf: the %s matches alternatives %d and %d, not exactly one", jsonType(v), matched, i)
				})
			}
			matched = i
			continue
		}
		if acceptsType(s, v) {
			accepting++
			only = s
		}
	}
	if matched >= 0 {
		return nil
	}
	if c.quiet > 0 {
		return quietFail
	}
	if accepting == 1 {
		// Checked again to write its failure (charged like any check).
		if f := c.eval(only, v, at); f != nil {
			return f
		}
	}
	return c.fail(at, func() string {
		return fmt.Sprintf("%s: the %s matches none of the %d alternatives", kw, jsonType(v), len(ss))
	})
}

// acceptsType reports whether s (through up to 8 $refs) lets v's type
// through.
func acceptsType(s *node, v any) bool {
	for i := 0; s != nil && i < 8; i++ {
		if s.never {
			return false
		}
		if s.types != 0 && s.types&typeOf(v) == 0 {
			return false
		}
		s = s.ref
	}
	return true
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := jsonrpc.ParseNumber(x)
		return f, err == nil || errors.Is(err, strconv.ErrRange)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func typeOf(v any) uint8 {
	switch v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case string:
		return tString
	case []any:
		return tArray
	case map[string]any:
		return tObject
	}
	if f, ok := num(v); ok {
		if f == math.Trunc(f) && !math.IsInf(f, 0) {
			return tNumber | tInteger
		}
		return tNumber
	}
	return 0
}

// jsonType names v's JSON Schema type ("integer" for a number without
// a fraction).
func jsonType(v any) string {
	t := typeOf(v)
	switch {
	case t&tInteger != 0:
		return "integer"
	case t == tNumber:
		return "number"
	case t == tNull:
		return "null"
	case t == tBool:
		return "boolean"
	case t == tString:
		return "string"
	case t == tArray:
		return "array"
	case t == tObject:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func (c *checker) local(n *node, v any, at *loc) *fail {
	if n.types != 0 && n.types&typeOf(v) == 0 {
		if len(n.typeNames) == 1 {
			return c.fail(at, func() string { return fmt.Sprintf("type: got %s, want %s", jsonType(v), n.typeNames[0]) })
		}
		return c.fail(at, func() string {
			return fmt.Sprintf("type: got %s, want one of %s", jsonType(v), strings.Join(n.typeNames, ", "))
		})
	}
	if n.hasEnum {
		found := false
		for _, e := range n.enum {
			if c.equal(e, v) {
				found = true
				break
			}
		}
		if c.over {
			return overFail
		}
		if !found {
			return c.fail(at, func() string { return fmt.Sprintf("enum: %s is not one of the allowed values", c.clip(v)) })
		}
	}
	if n.hasConst && !c.equal(n.constV, v) {
		if c.over {
			return overFail
		}
		return c.fail(at, func() string {
			return fmt.Sprintf("const: %s is not the required value %s", c.clip(v), c.clip(n.constV))
		})
	}
	if x, ok := num(v); ok {
		return c.numberFailure(n, x, at)
	}
	if s, ok := v.(string); ok {
		if n.minLen >= 0 || n.maxLen >= 0 {
			if !c.step(len(s) / 256) {
				return overFail
			}
			k := utf8.RuneCountInString(s)
			if n.minLen >= 0 && k < n.minLen {
				return c.fail(at, func() string { return fmt.Sprintf("minLength: %d characters, fewer than %d", k, n.minLen) })
			}
			if n.maxLen >= 0 && k > n.maxLen {
				return c.fail(at, func() string { return fmt.Sprintf("maxLength: %d characters, more than %d", k, n.maxLen) })
			}
		}
		if n.pattern != nil {
			if !c.match(n.pattern, s) {
				if c.over {
					return overFail
				}
				return c.fail(at, func() string { return fmt.Sprintf("pattern: %s does not match %q", c.clip(s), n.pattern.src) })
			}
		}
	}
	return nil
}

// match runs p on s, charging for the work: RE2 is linear in the
// string, with a factor that grows with the program.
func (c *checker) match(p *pattern, s string) bool {
	if !c.step(1 + len(s)*p.insts/1024) {
		return false
	}
	return p.re.MatchString(s)
}

func (c *checker) numberFailure(n *node, x float64, at *loc) *fail {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case n.min != nil && x < *n.min:
		return c.fail(at, func() string { return fmt.Sprintf("minimum: %s is less than %s", f(x), f(*n.min)) })
	case n.max != nil && x > *n.max:
		return c.fail(at, func() string { return fmt.Sprintf("maximum: %s is greater than %s", f(x), f(*n.max)) })
	case n.exMin != nil && x <= *n.exMin:
		return c.fail(at, func() string { return fmt.Sprintf("exclusiveMinimum: %s is not greater than %s", f(x), f(*n.exMin)) })
	case n.exMax != nil && x >= *n.exMax:
		return c.fail(at, func() string { return fmt.Sprintf("exclusiveMaximum: %s is not less than %s", f(x), f(*n.exMax)) })
	case n.multipleOf != nil:
		if _, frac := math.Modf(x / *n.multipleOf); frac != 0 {
			return c.fail(at, func() string { return fmt.Sprintf("multipleOf: %s is not a multiple of %s", f(x), f(*n.multipleOf)) })
		}
	}
	return nil
}

func (c *checker) object(n *node, obj map[string]any, at *loc) *fail {
	if !c.step(len(n.required) + len(n.depReqKeys)) {
		return overFail
	}
	var missing []string
	for _, r := range n.required {
		if _, ok := obj[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return c.fail(at, func() string { return "required: missing " + quoteList(missing) })
	}
	if n.minProps >= 0 && len(obj) < n.minProps {
		return c.fail(at, func() string { return fmt.Sprintf("minProperties: %d members, fewer than %d", len(obj), n.minProps) })
	}
	if n.maxProps >= 0 && len(obj) > n.maxProps {
		return c.fail(at, func() string { return fmt.Sprintf("maxProperties: %d members, more than %d", len(obj), n.maxProps) })
	}
	for _, k := range n.depReqKeys {
		if _, ok := obj[k]; !ok {
			continue
		}
		if !c.step(len(n.depReq[k])) {
			return overFail
		}
		missing = missing[:0]
		for _, r := range n.depReq[k] {
			if _, ok := obj[r]; !ok {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			return c.fail(at, func() string { return fmt.Sprintf("dependentRequired: member %q requires %s", k, quoteList(missing)) })
		}
	}
	if len(n.props) > 0 || len(n.patProps) > 0 || n.addl != nil || n.propNames != nil {
		if !c.step(len(obj)) {
			return overFail
		}
		names := make([]string, 0, len(obj))
		for k := range obj {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			child := &loc{up: at, key: k, isKey: true}
			if n.propNames != nil {
				if f := c.eval(n.propNames, k, child); f != nil {
					if f == overFail {
						return f
					}
					return c.fail(child, func() string {
						return "propertyNames: the member name " + strconv.Quote(clipString(k)) + " breaks the schema: " + f.reason
					})
				}
			}
			matched := false
			if s, ok := n.props[k]; ok {
				matched = true
				if f := c.eval(s, obj[k], child); f != nil {
					return f
				}
			}
			for _, pp := range n.patProps {
				if c.match(pp.re, k) {
					matched = true
					if f := c.eval(pp.n, obj[k], child); f != nil {
						return f
					}
				} else if c.over {
					return overFail
				}
			}
			if !matched && n.addl != nil {
				if n.addl.never {
					return c.fail(child, func() string { return fmt.Sprintf("additionalProperties: member %q is not allowed", clipString(k)) })
				}
				if f := c.eval(n.addl, obj[k], child); f != nil {
					return f
				}
			}
		}
	}
	for _, k := range n.depSchemaKey {
		if _, ok := obj[k]; ok {
			if f := c.eval(n.depSchemas[k], obj, at); f != nil {
				return f
			}
		}
	}
	return nil
}

func (c *checker) array(n *node, arr []any, at *loc) *fail {
	if n.minItems >= 0 && len(arr) < n.minItems {
		return c.fail(at, func() string { return fmt.Sprintf("minItems: %d items, fewer than %d", len(arr), n.minItems) })
	}
	if n.maxItems >= 0 && len(arr) > n.maxItems {
		return c.fail(at, func() string { return fmt.Sprintf("maxItems: %d items, more than %d", len(arr), n.maxItems) })
	}
	if len(n.prefix) > 0 || n.items != nil {
		for i, e := range arr {
			s := n.items
			if i < len(n.prefix) {
				s = n.prefix[i]
			}
			if s == nil {
				break
			}
			if f := c.eval(s, e, &loc{up: at, idx: i}); f != nil {
				return f
			}
		}
	}
	if n.contains != nil {
		matches := 0
		for i, e := range arr {
			if c.verdict(n.contains, e, &loc{up: at, idx: i}) {
				matches++
			}
			if c.over {
				return overFail
			}
		}
		switch {
		case matches < n.minContains && matches == 0:
			return c.fail(at, func() string { return fmt.Sprintf("contains: none of the %d items matches", len(arr)) })
		case matches < n.minContains:
			return c.fail(at, func() string {
				return fmt.Sprintf("minContains: %d items match, fewer than %d", matches, n.minContains)
			})
		case n.maxContains >= 0 && matches > n.maxContains:
			return c.fail(at, func() string { return fmt.Sprintf("maxContains: %d items match, more than %d", matches, n.maxContains) })
		}
	}
	if n.unique && len(arr) > 1 {
		seen := make(map[string]int, len(arr))
		var buf []byte
		for j, e := range arr {
			buf = c.canon(buf[:0], e)
			if c.over {
				return overFail
			}
			if i, ok := seen[string(buf)]; ok {
				return c.fail(&loc{up: at, idx: j}, func() string { return fmt.Sprintf("uniqueItems: items %d and %d are equal", i, j) })
			}
			seen[string(buf)] = j
		}
	}
	return nil
}

// equal compares decoded JSON values (numbers by value), charging a
// step for each value compared.
func (c *checker) equal(a, b any) bool {
	if !c.step(1) || !c.enter() {
		return false
	}
	defer c.leave()
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !c.equal(xv, yv) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !c.equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	fa, ok1 := num(a)
	fb, ok2 := num(b)
	return ok1 && ok2 && fa == fb
}

// canon appends a canonical encoding of v (members sorted, numbers by
// value), for uniqueItems.
func (c *checker) canon(b []byte, v any) []byte {
	if !c.step(1) || !c.enter() {
		return b
	}
	defer c.leave()
	switch x := v.(type) {
	case map[string]any:
		b = append(b, '{')
		for i, k := range sortedKeys(x) {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = c.canon(b, x[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = c.canon(b, e)
		}
		return append(b, ']')
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return strconv.AppendQuote(b, x)
	}
	f, _ := num(v)
	return strconv.AppendFloat(append(b, '#'), f, 'g', -1, 64)
}

// clip writes v for a message, at most 64 bytes of it, whatever v's
// size.
func (c *checker) clip(v any) string {
	b := appendClip(nil, v, 64)
	if len(b) > 64 {
		return string(b[:61]) + "..."
	}
	return string(b)
}

func clipString(s string) string {
	if len(s) <= 64 {
		return s
	}
	i := 61
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

func appendClip(b []byte, v any, limit int) []byte {
	if len(b) > limit {
		return b
	}
	switch x := v.(type) {
	case map[string]any:
		b = append(b, '{')
		keys := make([]string, 0, min(len(x), 8))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if len(b) > limit {
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendClip(b, k, limit)
			b = append(b, ':')
			b = appendClip(b, x[k], limit)
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if len(b) > limit {
				break
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = appendClip(b, e, limit)
		}
		return append(b, ']')
	case string:
		if len(x) > limit {
			x = x[:limit]
		}
		q, _ := json.Marshal(x)
		return append(b, q...)
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case json.Number:
		return append(b, x...)
	}
	f, ok := num(v)
	if !ok {
		return fmt.Appendf(b, "%v", v)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

func quoteList(ss []string) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		if b.Len() > 200 {
			fmt.Fprintf(&b, "and %d more", len(ss)-i)
			break
		}
		b.WriteString(strconv.Quote(clipString(s)))
	}
	return b.String()
}
