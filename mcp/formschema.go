package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// formSchema is the flat elicitation schema derived from a Go struct.
type formSchema struct {
	raw    json.RawMessage
	fields []formField
}

type formField struct {
	name     string
	kind     string // string, number, integer, boolean, array
	required bool
	enum     []string
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
			parts := strings.Split(tag, ",")
			if parts[0] == "-" {
				continue
			}
			if parts[0] != "" {
				name = parts[0]
			}
			omitempty = slices.Contains(parts[1:], "omitempty") || slices.Contains(parts[1:], "omitzero")
		}
		p := map[string]any{}
		ff := formField{name: name, required: !omitempty}
		if d := f.Tag.Get("jsonschema"); d != "" {
			p["description"] = d
		}
		for _, opt := range strings.Split(f.Tag.Get("mcp"), ",") {
			k, v, _ := strings.Cut(opt, "=")
			switch k {
			case "title", "format":
				p[k] = v
			case "enum":
				ff.enum = strings.Split(v, "|")
			}
		}
		switch f.Type.Kind() {
		case reflect.String:
			ff.kind = "string"
			if ff.enum != nil {
				p["enum"] = ff.enum
			}
		case reflect.Bool:
			ff.kind = "boolean"
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			ff.kind = "integer"
		case reflect.Float32, reflect.Float64:
			ff.kind = "number"
		case reflect.Slice:
			if f.Type.Elem().Kind() != reflect.String || ff.enum == nil {
				return nil, fmt.Errorf("mcp: Elicit[%s]: field %s (%s) is not a primitive; a list field must be []string with an `mcp:\"enum=a|b\"` tag", t, f.Name, f.Type)
			}
			ff.kind = "array"
			p["items"] = map[string]any{"type": "string", "enum": ff.enum}
		default:
			return nil, fmt.Errorf("mcp: Elicit[%s]: field %s (%s) is not a primitive; form fields must be string, number, integer or boolean", t, f.Name, f.Type)
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

// check validates an elicitation answer against the form: an accepted
// answer has every required field, each of its type; decline and cancel
// carry no content requirement.
func (fs *formSchema) check(r *ElicitResult) error {
	if r.Action != ElicitAccept {
		return nil
	}
	for _, f := range fs.fields {
		v, ok := r.Content[f.name]
		if !ok {
			if f.required {
				return fmt.Errorf("missing field %q", f.name)
			}
			continue
		}
		good := false
		switch f.kind {
		case "string":
			s, isStr := v.(string)
			good = isStr && (f.enum == nil || slices.Contains(f.enum, s))
		case "boolean":
			_, good = v.(bool)
		case "integer":
			_, good = v.(int64)
		case "number":
			switch v.(type) {
			case int64, float64:
				good = true
			}
		case "array":
			ss, isArr := v.([]string)
			good = isArr
			for _, s := range ss {
				good = good && slices.Contains(f.enum, s)
			}
		}
		if !good {
			return fmt.Errorf("field %q has the wrong type", f.name)
		}
	}
	return nil
}
