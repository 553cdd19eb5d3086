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
	form   Form        // the description; read schemas only
	fields []formField // the checks
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
		ft := f.Type
		optional := omitempty
		if ft.Kind() == reflect.Pointer { // an optional field: nil when not answered
			ft, optional = ft.Elem(), true
		}
		if d := f.Tag.Get("jsonschema"); d != "" {
			p["description"] = d
		}
		var enum []string
		var bounds []formBound
		var def string
		hasDef := false
		tag := f.Tag.Get("mcp")
		for tag != "" {
			opt := tag
			if k, _, _ := strings.Cut(tag, "="); k == "pattern" {
				tag = "" // pattern is last: it takes the rest, commas included
			} else if i := strings.IndexByte(tag, ','); i >= 0 {
				opt, tag = tag[:i], tag[i+1:]
			} else {
				tag = ""
			}
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "title", "description":
				p[k] = v
			case "format":
				if !knownFormat(v) {
					return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: format %q is not one of email, uri, date, date-time", t, f.Name, v)
				}
				p[k] = v
			case "enum":
				enum = strings.Split(v, "|")
			case "pattern":
				p[k] = v
			case "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems":
				bounds = append(bounds, formBound{k, v})
			case "default":
				def, hasDef = v, true
			case "required":
				optional = false
			case "optional":
				optional = true
			case "":
			default:
				return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: unknown mcp tag option %q", t, f.Name, k)
			}
		}
		ff := newField(name, "", !optional)
		if fm, ok := p["format"].(string); ok {
			ff.format = fm
		}
		switch ft.Kind() {
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
			if ft.Elem().Kind() != reflect.String || enum == nil {
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
		for _, b := range bounds {
			n, err := b.value(ff.kind)
			if err != nil {
				return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: %w", t, f.Name, err)
			}
			p[b.keyword] = n
		}
		if hasDef {
			d, err := tagDefault(ff.kind, def)
			if err != nil {
				return nil, fmt.Errorf("mcp: Elicit[%s]: field %s: default %q: %w", t, f.Name, def, err)
			}
			p["default"] = d
		}
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
	// The checks are those of the one schema reader (the same as
	// ElicitForm's): bounds, pattern and defaults are enforced exactly as
	// the schema sent says.
	read, err := formSchemaFromRaw(raw)
	if err != nil {
		return nil, fmt.Errorf("mcp: Elicit[%s]: %w", t, err)
	}
	fs.fields = read.fields
	fs.raw = raw
	return fs, nil
}

// formBound is a numeric option of an Elicit[T] field's mcp tag.
type formBound struct{ keyword, text string }

// value is the bound as the schema carries it: a number for minimum and
// maximum, a count otherwise; it must suit the field's kind.
func (b formBound) value(kind string) (any, error) {
	suits := map[string]string{"minimum": "number integer", "maximum": "number integer",
		"minLength": "string", "maxLength": "string", "minItems": "array", "maxItems": "array"}[b.keyword]
	if !slices.Contains(strings.Fields(suits), kind) {
		return nil, fmt.Errorf("%s does not apply to a %s field", b.keyword, kind)
	}
	if b.keyword == "minimum" || b.keyword == "maximum" {
		n := json.Number(b.text)
		if _, err := n.Float64(); err != nil {
			return nil, fmt.Errorf("%s=%q is not a number", b.keyword, b.text)
		}
		return n, nil
	}
	n, err := strconv.Atoi(b.text)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("%s=%q is not a count", b.keyword, b.text)
	}
	return n, nil
}

// tagDefault is an mcp tag's default=V as a value of the field's kind (a
// multi-select's is a|b).
func tagDefault(kind, v string) (any, error) {
	switch kind {
	case "boolean":
		return strconv.ParseBool(v)
	case "integer":
		return strconv.ParseInt(v, 10, 64)
	case "number":
		return strconv.ParseFloat(v, 64)
	case "array":
		return strings.Split(v, "|"), nil
	}
	return v, nil
}

func knownFormat(f string) bool {
	switch f {
	case "email", "uri", "date", "date-time":
		return true
	}
	return false
}

// Keywords of the restricted schema. Annotations are accepted and not
// checked; any other keyword is refused by a strict read.
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

// Bounds on a form schema, so that reading and rendering one costs no
// more than a form a person can fill: fields, options of one field, and
// the source of a pattern (which a client may compile). A server's own
// ElicitForm is held to them too, so that it never asks what an SDK
// client would refuse to read.
const (
	maxFormFields       = 256
	maxFormOptions      = 1024
	maxFormPatternBytes = 4096
)

// Form is a form-mode elicitation's requestedSchema as a description of
// the fields to show: what a client needs to render the form, with the
// fields in the order the server wrote them.
type Form struct {
	// Title and Description are the schema's own, when it has them.
	Title       string
	Description string
	Fields      []FormField
}

// Field returns the field named name, or nil.
func (f *Form) Field(name string) *FormField {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// FormField is one field of a Form: a property of the requestedSchema.
type FormField struct {
	// Name is the property name: the key of the field's value in the
	// answer's content.
	Name        string
	Title       string
	Description string
	// Type is "string", "number", "integer", "boolean", or "array" for a
	// multi-select (a list of strings, each one of Options).
	Type     string
	Required bool
	// Default is the value the server proposes (string, bool, int64 or
	// float64, or []string for a multi-select); nil when none.
	Default any
	// Options are the values a single-select (Type "string") or a
	// multi-select (Type "array") allows, with their display titles
	// (enum, with the legacy enumNames; oneOf or anyOf of {const,
	// title}; for an array the same under items). Nil for a free field.
	Options []FormOption
	// Format is the string format: email, uri, date or date-time ("" for
	// none). Pattern is a regular expression the string must match.
	Format  string
	Pattern string
	// Bounds, nil when not set: the length of a string (in characters),
	// the value of a number, the number of selected options.
	MinLength, MaxLength *int
	Minimum, Maximum     *float64
	MinItems, MaxItems   *int
	// WriteOnly is the schema's writeOnly annotation: the value is a
	// secret (a password, a key), to be masked as it is typed.
	WriteOnly bool
}

// Multiple reports whether the field is a multi-select.
func (f *FormField) Multiple() bool { return f.Type == "array" }

// FormOption is one allowed value of a select field.
type FormOption struct {
	// Value is what the answer carries; Title what to show ("" when the
	// server gave none: show Value).
	Value string
	Title string
}

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

// formText decodes a JSON string; ok is false for any other value.
func formText(v []byte) (s string, ok bool) {
	return s, jsonrpc.KindOf(v) == jsonrpc.KindString && json.Unmarshal(v, &s) == nil
}

// formSchemaFromRaw reads the schema of a server's own ElicitForm
// strictly (see readFormSchema), its checks in field-name order.
func formSchemaFromRaw(raw json.RawMessage) (*formSchema, error) {
	fs, err := readFormSchema(raw, true)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(fs.fields, func(a, b formField) int { return strings.Compare(a.name, b.name) })
	return fs, nil
}

// readFormSchema is the one reader of a flat elicitation schema: the
// server's ElicitForm checks, the client's ElicitRequest.Form and the
// CLI's terminal forms all read a schema through it. It returns the
// description (fs.form, fields in the order written) and the checks
// (fs.fields), within maxFormFields, maxFormOptions and
// maxFormPatternBytes.
//
// A strict read (the server's own schema) refuses what it could not
// enforce on an answer: a keyword outside the restricted schema (see the
// notes at the top of this file), an unknown format, a pattern RE2
// cannot compile, a required name that is no property, a property
// without a type. A lenient read (a schema from the peer) ignores the
// keywords the description has no place for. Both refuse a schema that
// is not an object of properties, a property that is not a string,
// number, integer, boolean or multi-select, a repeated name, malformed
// bounds, options or defaults.
func readFormSchema(raw json.RawMessage, strict bool) (*formSchema, error) {
	fail := func(format string, args ...any) error {
		if strict {
			return fmt.Errorf("mcp: ElicitForm: "+format, args...)
		}
		return fmt.Errorf("mcp: elicitation form: "+format, args...)
	}
	fs := &formSchema{raw: raw}
	raw = jsonrpc.TrimSpace(raw)
	if jsonrpc.KindOf(raw) != jsonrpc.KindObject || !jsonrpc.Valid(raw) {
		return nil, fail("the schema is not a JSON object")
	}
	var props []byte
	var required []string
	seen := map[string]bool{}
	err := jsonrpc.Fields(raw, func(rk, v []byte) error {
		k := string(jsonrpc.Key(rk))
		if seen[k] {
			return fmt.Errorf("the schema: member %q is repeated", k)
		}
		seen[k] = true
		v = jsonrpc.TrimSpace(v)
		switch k {
		case "title":
			fs.form.Title, _ = formText(v)
		case "description":
			fs.form.Description, _ = formText(v)
		case "type":
			if t, _ := formText(v); t != "object" {
				return errors.New(`the schema must be a JSON object with "type":"object"`)
			}
		case "properties":
			props = v
		case "required":
			if json.Unmarshal(v, &required) != nil {
				return errors.New(`"required" must be a list of property names`)
			}
		default:
			if strict && !keywordAllowed(k, formTopKeywords) {
				return fmt.Errorf("keyword %q is outside the restricted elicitation schema", k)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fail("%v", err)
	}
	if strict && !seen["type"] {
		return nil, fail(`the schema must be a JSON object with "type":"object"`)
	}
	isRequired := make(map[string]bool, len(required))
	for _, r := range required {
		isRequired[r] = true
	}
	switch jsonrpc.KindOf(props) {
	case jsonrpc.KindInvalid, jsonrpc.KindNull:
	case jsonrpc.KindObject:
		names := map[string]bool{}
		err := jsonrpc.Fields(props, func(rk, v []byte) error {
			name := string(jsonrpc.Key(rk))
			if names[name] {
				return fmt.Errorf("property %q is declared twice", name)
			}
			if len(names) == maxFormFields {
				return fmt.Errorf("more than %d fields", maxFormFields)
			}
			names[name] = true
			view, check, err := readFormField(name, v, isRequired[name], strict)
			if err != nil {
				return fmt.Errorf("property %q: %v", name, err)
			}
			fs.form.Fields = append(fs.form.Fields, view)
			fs.fields = append(fs.fields, check)
			return nil
		})
		if err != nil {
			return nil, fail("%v", err)
		}
	default:
		return nil, fail(`"properties" must be an object`)
	}
	if strict {
		for _, r := range required {
			if fs.field(r) == nil {
				return nil, fail("required property %q is not declared", r)
			}
		}
	}
	return fs, nil
}

// readFormField reads one property: its description and its checks.
func readFormField(name string, raw []byte, required, strict bool) (FormField, formField, error) {
	view := FormField{Name: name, Required: required}
	p, err := objectMembers(raw)
	if err != nil {
		return view, formField{}, err
	}
	kind, _ := formText(p["type"])
	if _, typed := p["type"]; !typed && !strict && (p["enum"] != nil || p["oneOf"] != nil || p["anyOf"] != nil) {
		kind = "string"
	}
	if kindKeywords[kind] == nil {
		switch {
		case strict:
			return view, formField{}, errors.New(`"type" must be one of string, number, integer, boolean or array (a multi-select)`)
		case kind == "":
			return view, formField{}, errors.New("no type")
		}
		return view, formField{}, fmt.Errorf("type %q is not a form field type (string, number, integer, boolean, or array for a multi-select)", kind)
	}
	view.Type = kind
	f := newField(name, kind, required)
	if strict {
		for k := range p {
			if k != "type" && !keywordAllowed(k, annotations, kindKeywords[kind]) {
				return view, f, fmt.Errorf("keyword %q is outside the restricted elicitation schema for type %s", k, kind)
			}
		}
	}
	view.Title, _ = formText(p["title"])
	view.Description, _ = formText(p["description"])
	if w, ok := p["writeOnly"]; ok {
		view.WriteOnly = string(w) == "true"
	}
	var enum, enumNames []string
	var titled []FormOption
	if v, ok := p["enum"]; ok {
		if json.Unmarshal(v, &enum) != nil || (strict && enum == nil) {
			return view, f, errors.New(`"enum" must be a list of strings`)
		}
		if enum != nil {
			f.allowed = append(f.allowed, enum)
		}
	}
	if v, ok := p["enumNames"]; ok && json.Unmarshal(v, &enumNames) != nil && strict {
		return view, f, errors.New(`"enumNames" must be a list of strings`)
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if v, ok := p[k]; ok {
			opts, err := titledOptions(v, strict)
			if err != nil {
				return view, f, fmt.Errorf("%q: %v", k, err)
			}
			titled = opts
			f.allowed = append(f.allowed, optionValues(opts))
		}
	}
	if v, ok := p["format"]; ok {
		view.Format, _ = formText(v)
		if strict && !knownFormat(view.Format) {
			return view, f, errors.New(`"format" must be one of email, uri, date, date-time`)
		}
		if knownFormat(view.Format) {
			f.format = view.Format
		}
	}
	if v, ok := p["pattern"]; ok {
		src, isText := formText(v)
		if !isText && strict {
			return view, f, errors.New(`"pattern" must be a string`)
		}
		if len(src) > maxFormPatternBytes {
			return view, f, fmt.Errorf(`"pattern" is longer than %d bytes`, maxFormPatternBytes)
		}
		view.Pattern = src
		if strict {
			re, err := regexp.Compile(src)
			if err != nil {
				return view, f, fmt.Errorf(`"pattern" is not a regular expression Go's regexp (RE2) accepts: %v`, err)
			}
			f.pattern = re
		}
	}
	for _, k := range []string{"minLength", "maxLength", "minItems", "maxItems"} {
		v, ok := p[k]
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(string(v), 10, 31)
		if err != nil {
			return view, f, fmt.Errorf("%q must be a non-negative integer", k)
		}
		i := int(n)
		switch k {
		case "minLength":
			view.MinLength, f.minLen = &i, i
		case "maxLength":
			view.MaxLength, f.maxLen = &i, i
		case "minItems":
			view.MinItems, f.minItems = &i, i
		default:
			view.MaxItems, f.maxItems = &i, i
		}
	}
	for _, k := range []string{"minimum", "maximum"} {
		v, ok := p[k]
		if !ok {
			continue
		}
		// Finite numbers only (a bound like 1e999999 would make
		// the exact comparison expensive).
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil || jsonrpc.KindOf(v) != jsonrpc.KindNumber {
			return view, f, fmt.Errorf("%q must be a finite number", k)
		}
		r, isRat := new(big.Rat).SetString(string(v))
		if !isRat {
			return view, f, fmt.Errorf("%q must be a finite number", k)
		}
		if k == "minimum" {
			view.Minimum, f.min, f.minText = &x, r, string(v)
		} else {
			view.Maximum, f.max, f.maxText = &x, r, string(v)
		}
	}
	if kind == "array" {
		opts, err := itemOptions(p["items"], strict, &f)
		if err != nil {
			return view, f, err
		}
		view.Options = opts
	} else {
		view.Options = selectOptions(enum, enumNames, titled)
		if view.Options != nil && len(view.Options) == 0 {
			return view, f, errors.New("an empty list of options")
		}
	}
	if len(view.Options) > maxFormOptions {
		return view, f, fmt.Errorf("more than %d options", maxFormOptions)
	}
	if def, ok := p["default"]; ok && jsonrpc.KindOf(def) != jsonrpc.KindNull {
		d, err := formDefault(def)
		if err != nil {
			return view, f, err
		}
		view.Default = d
	}
	return view, f, nil
}

// itemOptions reads the options of a multi-select's items, adding their
// value sets to f's.
func itemOptions(items []byte, strict bool, f *formField) ([]FormOption, error) {
	m, err := objectMembers(items)
	if err != nil {
		return nil, errors.New(`a multi-select needs "items" with its options`)
	}
	var enum []string
	var titled []FormOption
	for k, v := range m {
		switch {
		case strict && !keywordAllowed(k, itemKeywords):
			return nil, fmt.Errorf(`"items": keyword %q is outside the restricted elicitation schema`, k)
		case k == "type":
			if string(v) != `"string"` {
				return nil, errors.New(`"items": the items of a multi-select are strings`)
			}
		case k == "enum":
			if json.Unmarshal(v, &enum) != nil || (strict && enum == nil) {
				return nil, errors.New(`"items": "enum" must be a list of strings`)
			}
			if enum != nil {
				f.allowed = append(f.allowed, enum)
			}
		}
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if v, ok := m[k]; ok {
			opts, err := titledOptions(v, strict)
			if err != nil {
				return nil, fmt.Errorf(`"items": %q: %v`, k, err)
			}
			titled = opts
			f.allowed = append(f.allowed, optionValues(opts))
		}
	}
	opts := selectOptions(enum, nil, titled)
	if len(opts) == 0 {
		return nil, errors.New("a multi-select needs options (items with enum, anyOf or oneOf)")
	}
	return opts, nil
}

// selectOptions joins the ways a schema lists options: titled consts
// first, else enum with the legacy enumNames as titles.
func selectOptions(enum, names []string, titled []FormOption) []FormOption {
	if titled != nil {
		return titled
	}
	if enum == nil {
		return nil
	}
	opts := make([]FormOption, len(enum))
	for i, e := range enum {
		opts[i].Value = e
		if i < len(names) {
			opts[i].Title = names[i]
		}
	}
	return opts
}

// titledOptions reads the options of a titled enum:
// [{"const":..,"title":..}]; a strict read refuses other keywords.
func titledOptions(v []byte, strict bool) ([]FormOption, error) {
	if jsonrpc.KindOf(v) != jsonrpc.KindArray {
		return nil, errors.New("must be a list of {const, title} options")
	}
	opts := []FormOption{}
	err := jsonrpc.Elements(v, func(e []byte) error {
		if len(opts) == maxFormOptions {
			return fmt.Errorf("more than %d options", maxFormOptions)
		}
		m, err := objectMembers(e)
		if err != nil {
			return errors.New("must be a list of {const, title} options")
		}
		c, ok := formText(m["const"])
		if !ok {
			return errors.New("every option needs a string const")
		}
		for k := range m {
			if strict && k != "const" && !keywordAllowed(k, annotations) {
				return fmt.Errorf("option keyword %q is outside the restricted elicitation schema", k)
			}
		}
		title, _ := formText(m["title"])
		opts = append(opts, FormOption{Value: c, Title: title})
		return nil
	})
	return opts, err
}

func optionValues(opts []FormOption) []string {
	out := make([]string, len(opts))
	for i, o := range opts {
		out[i] = o.Value
	}
	return out
}

// formDefault decodes a default as answers carry values.
func formDefault(v []byte) (any, error) {
	r, err := decodeElicitResult(append(append([]byte(`{"action":"accept","content":{"d":`), v...), "}}"...))
	if err != nil {
		return nil, errors.New(`"default" is not a string, number, boolean or list of strings`)
	}
	return r.Content["d"], nil
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
