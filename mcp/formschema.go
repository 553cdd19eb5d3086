package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/mail"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Elicitation forms: the flat schema sent with a form-mode question and
// the checks an answer must pass before a handler sees it.
//
// The specification restricts requestedSchema to an object of primitive
// properties (PrimitiveSchemaDefinition): strings with minLength,
// maxLength, format (email, uri, date, date-time) and, in this SDK,
// pattern; numbers and integers with minimum and maximum; booleans;
// single-select enums (enum, or oneOf of {const, title}, or the legacy
// enum + enumNames); multi-select arrays of string items (items.enum or
// items.anyOf of {const, title}) with minItems and maxItems; and the
// required list. Every one of those is enforced on an accepted answer.
// A schema using any other keyword is refused when the question is asked
// (a programmer error): nothing the client is shown goes unchecked.
//
// An answer is read exactly as it is checked:
//
//   - member names are compared exactly, after resolving escapes; a
//     repeated member ({"region":"us","\u0072egion":"eu"}) makes the
//     answer invalid;
//   - a member that equals a declared property under the case folding
//     encoding/json applies (jsonrpc.EqualFold: "REGION", "regionſ"...)
//     without being it, and without being declared itself, makes the
//     answer invalid, since a decoder that folds would read it as the
//     property;
//   - members the schema does not declare are dropped: ElicitResult's
//     Content holds the declared properties only, and Elicit[T] decodes
//     T from them only;
//   - decline and cancel carry no content: any sent is dropped.
//
// pattern is matched with Go's regexp package (RE2 syntax, unanchored as
// in JSON Schema), which differs from the ECMA-262 dialect JSON Schema
// names: no lookaround or backreferences, and some escapes and classes
// differ. A pattern RE2 cannot compile is refused when the question is
// asked.

// formSchema is the flat elicitation schema of one question.
type formSchema struct {
	raw    json.RawMessage
	fields []formField
}

type formField struct {
	name     string
	kind     string // string, number, integer, boolean, array
	required bool
	// allowed are the value sets a string, or each item of an array,
	// must belong to: enum, and the consts of oneOf/anyOf.
	allowed            [][]string
	format             string // email, uri, date, date-time; "" for none
	pattern            *regexp.Regexp
	minLen, maxLen     int // in code points; -1 when unset
	min, max           *big.Rat
	minText, maxText   string // the bounds as the schema wrote them
	minItems, maxItems int    // -1 when unset
}

func newField(name, kind string, required bool) formField {
	return formField{name: name, kind: kind, required: required, minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
}

var formSchemas sync.Map // reflect.Type → *formSchema or error

func formSchemaFor[T any]() (*formSchema, error) {
	t := reflect.TypeFor[T]()
	if v, ok := formSchemas.Load(t); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*formSchema), nil
	}
	fs, err := buildFormSchema(t)
	if err != nil {
		formSchemas.Store(t, err)
		return nil, err
	}
	formSchemas.Store(t, fs)
	return fs, nil
}

// validTagName reports whether encoding/json takes s as a field's name
// (otherwise it falls back to the Go field name).
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return false
		}
	}
	return true
}

// buildFormSchema derives the schema. Elicitation forms are flat: every
// field must be a primitive (string, number, integer, boolean) or a
// string slice with an enum (a multi-select).
func buildFormSchema(t reflect.Type) (*formSchema, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("mcp: Elicit[%s]: the form type must be a struct", t)
	}
	props := map[string]any{}
	var required []string
	fs := &formSchema{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, omitempty := f.Name, false
		if tag, ok := f.Tag.Lookup("json"); ok {
			if tag == "-" {
				continue
			}
			parts := strings.Split(tag, ",")
			if parts[0] != "" {
				if !validTagName(parts[0]) {
					return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: json name %q is not one encoding/json accepts", t, f.Name, parts[0])
				}
				name = parts[0]
			}
			omitempty = slices.Contains(parts[1:], "omitempty") || slices.Contains(parts[1:], "omitzero")
		}
		if _, dup := props[name]; dup {
			return nil, fmt.Errorf("mcp: Elicit[%s]: two fields are named %q", t, name)
		}
		p := map[string]any{}
		ff := newField(name, "", !omitempty)
		if d := f.Tag.Get("jsonschema"); d != "" {
			p["description"] = d
		}
		var enum []string
		for _, opt := range strings.Split(f.Tag.Get("mcp"), ",") {
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "title":
				p[k] = v
			case "format":
				if !knownFormat(v) {
					return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: format %q is not one of email, uri, date, date-time", t, f.Name, v)
				}
				p[k], ff.format = v, v
			case "enum":
				enum = strings.Split(v, "|")
			}
		}
		switch f.Type.Kind() {
		case reflect.String:
			ff.kind = "string"
			if enum != nil {
				p["enum"] = enum
			}
		case reflect.Bool:
			ff.kind = "boolean"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			ff.kind = "integer"
		case reflect.Float32, reflect.Float64:
			ff.kind = "number"
		case reflect.Slice:
			if f.Type.Elem().Kind() != reflect.String || enum == nil {
				return nil, fmt.Errorf("mcp: Elicit[%s]: field %s (%s) is not a primitive; a list field must be []string with an `mcp:\"enum=a|b\"` tag", t, f.Name, f.Type)
			}
			ff.kind = "array"
			p["items"] = map[string]any{"type": "string", "enum": enum}
		default:
			return nil, fmt.Errorf("mcp: Elicit[%s]: field %s (%s) is not a primitive; form fields must be string, number, integer or boolean", t, f.Name, f.Type)
		}
		if ff.format != "" && ff.kind != "string" {
			return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: format applies to strings only", t, f.Name)
		}
		if enum != nil {
			if ff.kind != "string" && ff.kind != "array" {
				return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: enum applies to strings and string lists only", t, f.Name)
			}
			ff.allowed = [][]string{enum}
		}
		p["type"] = ff.kind
		props[name] = p
		if ff.required {
			required = append(required, name)
		}
		fs.fields = append(fs.fields, ff)
	}
	schema := map[string]any{"type": "object", "properties": props}
	if required != nil {
		schema["required"] = required
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	fs.raw = raw
	return fs, nil
}

func knownFormat(f string) bool {
	switch f {
	case "email", "uri", "date", "date-time":
		return true
	}
	return false
}

// Keywords of the restricted schema. Annotations are accepted and not
// checked; any other keyword is refused.
var (
	formTopKeywords = []string{"type", "properties", "required", "$schema", "title", "description", "$comment"}
	annotations     = []string{"title", "description", "default", "$comment", "examples", "deprecated"}
	kindKeywords    = map[string][]string{
		"string":  {"enum", "enumNames", "oneOf", "anyOf", "format", "pattern", "minLength", "maxLength"},
		"number":  {"minimum", "maximum"},
		"integer": {"minimum", "maximum"},
		"boolean": {},
		"array":   {"items", "minItems", "maxItems"},
	}
	itemKeywords = []string{"type", "enum", "anyOf", "oneOf", "title", "description"}
)

// objectMembers decodes a JSON object into its members by exact name,
// refusing repeated names.
func objectMembers(raw []byte) (map[string]json.RawMessage, error) {
	raw = jsonrpc.TrimSpace(raw)
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject || !jsonrpc.Valid(raw) {
		return nil, errors.New("not a JSON object")
	}
	m := map[string]json.RawMessage{}
	err := jsonrpc.Fields(raw, func(rk, v []byte) error {
		k := string(jsonrpc.Key(rk))
		if _, dup := m[k]; dup {
			return fmt.Errorf("member %q is repeated", k)
		}
		m[k] = jsonrpc.TrimSpace(v)
		return nil
	})
	return m, err
}

func keywordAllowed(k string, lists ...[]string) bool {
	if strings.HasPrefix(k, "x-") {
		return true
	}
	for _, l := range lists {
		if slices.Contains(l, k) {
			return true
		}
	}
	return false
}

// formSchemaFromRaw reads a flat elicitation schema given as JSON (see the
// notes at the top of this file): every keyword it holds is either
// checked on the answer or a mere annotation; anything else is an error.
func formSchemaFromRaw(raw json.RawMessage) (*formSchema, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("mcp: ElicitForm: "+format, args...)
	}
	top, err := objectMembers(raw)
	if err != nil {
		return nil, fail("the schema: %v", err)
	}
	if string(top["type"]) != `"object"` {
		return nil, fail(`the schema must be a JSON object with "type":"object"`)
	}
	for k := range top {
		if !keywordAllowed(k, formTopKeywords) {
			return nil, fail("keyword %q is outside the restricted elicitation schema", k)
		}
	}
	var required []string
	if r, ok := top["required"]; ok && json.Unmarshal(r, &required) != nil {
		return nil, fail(`"required" must be a list of property names`)
	}
	var props map[string]json.RawMessage
	if p, ok := top["properties"]; ok {
		if props, err = objectMembers(p); err != nil {
			return nil, fail(`"properties": %v`, err)
		}
	}
	for _, r := range required {
		if _, ok := props[r]; !ok {
			return nil, fail("required property %q is not declared", r)
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	fs := &formSchema{raw: raw}
	for _, name := range names {
		f, err := parseFormField(name, props[name], slices.Contains(required, name))
		if err != nil {
			return nil, fail("property %q: %v", name, err)
		}
		fs.fields = append(fs.fields, f)
	}
	return fs, nil
}

func parseFormField(name string, raw json.RawMessage, required bool) (formField, error) {
	p, err := objectMembers(raw)
	if err != nil {
		return formField{}, err
	}
	var kind string
	if json.Unmarshal(p["type"], &kind) != nil || kindKeywords[kind] == nil {
		return formField{}, errors.New(`"type" must be one of string, number, integer, boolean or array (a multi-select)`)
	}
	f := newField(name, kind, required)
	for k, v := range p {
		if k == "type" || keywordAllowed(k, annotations) {
			continue
		}
		if !keywordAllowed(k, kindKeywords[kind]) {
			return f, fmt.Errorf("keyword %q is outside the restricted elicitation schema for type %s", k, kind)
		}
		switch k {
		case "enum":
			var e []string
			if json.Unmarshal(v, &e) != nil || e == nil {
				return f, errors.New(`"enum" must be a list of strings`)
			}
			f.allowed = append(f.allowed, e)
		case "enumNames":
			var e []string
			if json.Unmarshal(v, &e) != nil {
				return f, errors.New(`"enumNames" must be a list of strings`)
			}
		case "oneOf", "anyOf":
			c, err := titledConsts(v)
			if err != nil {
				return f, fmt.Errorf("%q: %v", k, err)
			}
			f.allowed = append(f.allowed, c)
		case "format":
			if json.Unmarshal(v, &f.format) != nil || !knownFormat(f.format) {
				return f, errors.New(`"format" must be one of email, uri, date, date-time`)
			}
		case "pattern":
			var src string
			if json.Unmarshal(v, &src) != nil {
				return f, errors.New(`"pattern" must be a string`)
			}
			re, err := regexp.Compile(src)
			if err != nil {
				return f, fmt.Errorf(`"pattern" is not a regular expression Go's regexp (RE2) accepts: %v`, err)
			}
			f.pattern = re
		case "minLength", "maxLength", "minItems", "maxItems":
			n, err := jsonrpc.ParseUint(v, 31)
			if err != nil {
				return f, fmt.Errorf("%q must be a non-negative integer", k)
			}
			switch k {
			case "minLength":
				f.minLen = int(n)
			case "maxLength":
				f.maxLen = int(n)
			case "minItems":
				f.minItems = int(n)
			default:
				f.maxItems = int(n)
			}
		case "minimum", "maximum":
			// Finite numbers only (a bound like 1e999999 would make
			// the exact comparison expensive).
			if _, err := jsonrpc.ParseNumber(v); err != nil {
				return f, fmt.Errorf("%q must be a finite number", k)
			}
			r, ok := new(big.Rat).SetString(string(v))
			if !ok {
				return f, fmt.Errorf("%q must be a finite number", k)
			}
			if k == "minimum" {
				f.min, f.minText = r, string(v)
			} else {
				f.max, f.maxText = r, string(v)
			}
		case "items":
			items, err := objectMembers(v)
			if err != nil {
				return f, fmt.Errorf(`"items": %v`, err)
			}
			for ik, iv := range items {
				switch {
				case !keywordAllowed(ik, itemKeywords):
					return f, fmt.Errorf(`"items": keyword %q is outside the restricted elicitation schema`, ik)
				case ik == "type":
					if string(iv) != `"string"` {
						return f, errors.New(`"items": the items of a multi-select are strings`)
					}
				case ik == "enum":
					var e []string
					if json.Unmarshal(iv, &e) != nil || e == nil {
						return f, errors.New(`"items": "enum" must be a list of strings`)
					}
					f.allowed = append(f.allowed, e)
				case ik == "anyOf" || ik == "oneOf":
					c, err := titledConsts(iv)
					if err != nil {
						return f, fmt.Errorf(`"items": %q: %v`, ik, err)
					}
					f.allowed = append(f.allowed, c)
				}
			}
		}
	}
	if kind == "array" && f.allowed == nil {
		return f, errors.New("an array must be a multi-select (items with enum, oneOf or anyOf)")
	}
	return f, nil
}

// titledConsts reads the options of a titled enum: [{"const":..,"title":..}].
func titledConsts(v json.RawMessage) ([]string, error) {
	var opts []json.RawMessage
	if json.Unmarshal(v, &opts) != nil {
		return nil, errors.New("must be a list of {const, title} options")
	}
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		m, err := objectMembers(o)
		if err != nil {
			return nil, errors.New("must be a list of {const, title} options")
		}
		var c string
		if json.Unmarshal(m["const"], &c) != nil {
			return nil, errors.New("every option needs a string const")
		}
		for k := range m {
			if k != "const" && !keywordAllowed(k, annotations) {
				return nil, fmt.Errorf("option keyword %q is outside the restricted elicitation schema", k)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func (fs *formSchema) field(name string) *formField {
	for i := range fs.fields {
		if fs.fields[i].name == name {
			return &fs.fields[i]
		}
	}
	return nil
}

// check validates an elicitation answer against the form and trims it to
// what the form declares: decline and cancel lose any content; an
// accepted answer loses undeclared members, must not hold a case variant
// of a declared one, must have every required field, and each field must
// pass its property's checks. A failure is an *answerFault naming the
// field and the rule.
func (fs *formSchema) check(r *ElicitResult) error {
	if r.Action != ElicitAccept {
		r.Content = nil
		return nil
	}
	for k := range r.Content {
		if fs.field(k) != nil {
			continue
		}
		for i := range fs.fields {
			if name := fs.fields[i].name; jsonrpc.EqualFold([]byte(k), name) {
				return fault(name, "case", "the answer holds "+strconv.Quote(cutRunes(k, maxNameRunes))+", which differs from the field "+fieldName(name)+" only in case")
			}
		}
		delete(r.Content, k)
	}
	for i := range fs.fields {
		f := &fs.fields[i]
		v, ok := r.Content[f.name]
		if !ok {
			if f.required {
				return fault(f.name, "required", fieldName(f.name)+" is required")
			}
			continue
		}
		if err := f.check(v); err != nil {
			return err
		}
	}
	return nil
}

// check checks one value; a failure is an *answerFault.
func (f *formField) check(v any) error {
	name := fieldName(f.name)
	wrongType := func(want string) error {
		return fault(f.name, "type", name+" must be "+want+" (got "+kindOfValue(v)+")")
	}
	switch f.kind {
	case "string":
		s, ok := v.(string)
		if !ok {
			return wrongType("a string")
		}
		if !f.inAllowed(s) {
			return fault(f.name, "enum", name+" must be one of "+quotedList(f.allowedValues())+" (got "+shownValue(s)+")")
		}
		n := utf8.RuneCountInString(s)
		if f.minLen >= 0 && n < f.minLen {
			return fault(f.name, "minLength", name+" must be at least "+plural(f.minLen, "character")+" long (got "+strconv.Itoa(n)+")")
		}
		if f.maxLen >= 0 && n > f.maxLen {
			return fault(f.name, "maxLength", name+" must be at most "+plural(f.maxLen, "character")+" long (got "+strconv.Itoa(n)+")")
		}
		if f.pattern != nil && !f.pattern.MatchString(s) {
			return fault(f.name, "pattern", name+" must match the pattern "+f.pattern.String()+" (got "+shownValue(s)+")")
		}
		if f.format != "" && !validFormat(f.format, s) {
			return fault(f.name, "format", name+" must be "+formatNames[f.format]+" (got "+shownValue(s)+")")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return wrongType("true or false")
		}
	case "integer", "number":
		var r big.Rat
		switch n := v.(type) {
		case int64:
			r.SetInt64(n)
		case float64:
			if f.kind == "integer" {
				return fault(f.name, "type", name+" must be an integer (got "+shownValue(n)+")")
			}
			r.SetFloat64(n) // finite: the decoder refuses what overflows
		default:
			if f.kind == "integer" {
				return wrongType("an integer")
			}
			return wrongType("a number")
		}
		if f.min != nil && r.Cmp(f.min) < 0 {
			return fault(f.name, "minimum", name+" must be at least "+f.minText+" (got "+shownValue(v)+")")
		}
		if f.max != nil && r.Cmp(f.max) > 0 {
			return fault(f.name, "maximum", name+" must be at most "+f.maxText+" (got "+shownValue(v)+")")
		}
	case "array":
		ss, ok := v.([]string)
		if !ok {
			return wrongType("a list of strings")
		}
		for _, s := range ss {
			if !f.inAllowed(s) {
				return fault(f.name, "enum", name+" may hold only "+quotedList(f.allowedValues())+" (got "+shownValue(s)+")")
			}
		}
		if f.minItems >= 0 && len(ss) < f.minItems {
			return fault(f.name, "minItems", name+" must hold at least "+plural(f.minItems, "item")+" (got "+strconv.Itoa(len(ss))+")")
		}
		if f.maxItems >= 0 && len(ss) > f.maxItems {
			return fault(f.name, "maxItems", name+" must hold at most "+plural(f.maxItems, "item")+" (got "+strconv.Itoa(len(ss))+")")
		}
	default:
		return wrongType("a " + f.kind)
	}
	return nil
}

// formatNames say what each format asks for.
var formatNames = map[string]string{
	"email":     "an email address",
	"uri":       "an absolute URI",
	"date":      "a date (YYYY-MM-DD)",
	"date-time": "a date-time with a time zone (RFC 3339)",
}

// allowedValues returns the values every allowed set admits (enum and
// titled consts together), in the order of the first set.
func (f *formField) allowedValues() []string {
	if len(f.allowed) == 0 {
		return nil
	}
	var out []string
	for _, v := range f.allowed[0] {
		if f.inAllowed(v) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func (f *formField) inAllowed(s string) bool {
	for _, set := range f.allowed {
		if !slices.Contains(set, s) {
			return false
		}
	}
	return true
}

// declaredContent rewrites the raw content of a checked answer to its
// declared members only, named exactly: what Elicit[T] decodes.
func (fs *formSchema) declaredContent(content []byte) []byte {
	out := make([]byte, 0, len(content)+2)
	out = append(out, '{')
	_ = jsonrpc.Fields(content, func(rk, v []byte) error {
		k := jsonrpc.Key(rk)
		if fs.field(string(k)) == nil {
			return nil
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = jsonrpc.AppendString(out, string(k))
		out = append(out, ':')
		out = append(out, jsonrpc.TrimSpace(v)...)
		return nil
	})
	return append(out, '}')
}

// validFormat checks the string formats of the restricted schema:
//
//   - email: an RFC 5322 addr-spec alone (no display name, comment or
//     angle brackets), as net/mail parses it;
//   - uri: an absolute URI (RFC 3986): a scheme, then only URI
//     characters, percent-escapes well formed;
//   - date: an RFC 3339 full-date (2006-01-02), a real calendar day;
//   - date-time: an RFC 3339 date-time with a time zone offset.
func validFormat(format, s string) bool {
	switch format {
	case "email":
		a, err := mail.ParseAddress(s)
		return err == nil && a.Name == "" && a.Address == s
	case "uri":
		return validURI(s)
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil && len(s) == len(time.DateOnly)
	case "date-time":
		// RFC 3339 allows lower-case t and z; Go's layout does not.
		if len(s) > 10 && s[10] == 't' {
			s = s[:10] + "T" + s[11:]
		}
		if strings.HasSuffix(s, "z") {
			s = s[:len(s)-1] + "Z"
		}
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	}
	return false
}

func validURI(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon < 1 {
		return false
	}
	for i := 0; i < colon; i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}", c) >= 0 {
			return false
		}
		if c == '%' && (i+2 >= len(s) || !isHexDigit(s[i+1]) || !isHexDigit(s[i+2])) {
			return false
		}
	}
	_, err := url.Parse(s)
	return err == nil
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
