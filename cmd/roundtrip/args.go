package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// splitCommand splits a command line into words the way a POSIX shell
// does for the simple cases: blanks separate words, single quotes keep
// everything, double quotes keep everything but \" and \\, a backslash
// outside quotes escapes the next character. Nothing is expanded.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// propSchema is the part of a property's JSON Schema the CLI checks.
type propSchema struct {
	Type        json.RawMessage   `json:"type"`
	Enum        []json.RawMessage `json:"enum"`
	Description string            `json:"description"`
}

// types returns the property's types ("string", ...), nil when the schema
// does not say.
func (p *propSchema) types() []string {
	var one string
	if json.Unmarshal(p.Type, &one) == nil && one != "" {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(p.Type, &many)
	return many
}

// objectSchema is the part of a tool's input schema the CLI checks.
type objectSchema struct {
	Properties           map[string]*propSchema `json:"properties"`
	Required             []string               `json:"required"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"`
}

func parseObjectSchema(schema any) (*objectSchema, error) {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	s := new(objectSchema)
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("the input schema is not a JSON Schema object: %w", err)
	}
	return s, nil
}

// buildToolArgs turns the positional arguments after the tool name into
// the arguments object: one JSON object, or KEY=VALUE pairs. schema, when
// not nil, types the values (a string property takes the value as is)
// and the result is checked against it.
func buildToolArgs(words []string, schema *objectSchema) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if len(words) == 1 && strings.HasPrefix(strings.TrimSpace(words[0]), "{") {
		if err := json.Unmarshal([]byte(words[0]), &args); err != nil {
			return nil, usagef("the arguments are not a JSON object: %v", err)
		}
	} else {
		for _, w := range words {
			key, value, ok := strings.Cut(w, "=")
			if !ok || key == "" {
				return nil, usagef("argument %q is not KEY=VALUE (or give one JSON object)", w)
			}
			if _, dup := args[key]; dup {
				return nil, usagef("argument %q given twice", key)
			}
			var p *propSchema
			if schema != nil {
				p = schema.Properties[key]
			}
			args[key] = typedValue(value, p)
		}
	}
	if schema != nil {
		if err := checkArgs(args, schema); err != nil {
			return nil, err
		}
	}
	return args, nil
}

// typedValue encodes a KEY=VALUE value: JSON when it parses, else a
// string; a property typed only "string" always takes the text.
func typedValue(value string, p *propSchema) json.RawMessage {
	str, _ := json.Marshal(value)
	if p != nil {
		ts := p.types()
		if len(ts) == 1 && ts[0] == "string" {
			return str
		}
	}
	if json.Valid([]byte(value)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(value)) == nil {
			return buf.Bytes()
		}
	}
	return str
}

// jsonType returns the JSON Schema type of a JSON value ("integer" for
// whole numbers).
func jsonType(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return ""
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		if _, err := n.Int64(); err == nil {
			return "integer"
		}
		var f float64
		if json.Unmarshal(v, &f) == nil && f == float64(int64(f)) && !bytes.ContainsAny(v, ".") {
			return "integer"
		}
		return "number"
	}
	return ""
}

// checkArgs checks the top-level properties of args against schema:
// types, enums, required properties and, when additionalProperties is
// false, unknown names.
func checkArgs(args map[string]json.RawMessage, schema *objectSchema) error {
	var problems []string
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := args[k]
		p, ok := schema.Properties[k]
		if !ok {
			if string(bytes.TrimSpace(schema.AdditionalProperties)) == "false" {
				known := make([]string, 0, len(schema.Properties))
				for n := range schema.Properties {
					known = append(known, n)
				}
				sort.Strings(known)
				problems = append(problems, fmt.Sprintf("unknown argument %q (the tool takes: %s)", k, strings.Join(known, ", ")))
			}
			continue
		}
		if ts := p.types(); len(ts) > 0 {
			got := jsonType(v)
			if !slices.Contains(ts, got) && !(got == "integer" && slices.Contains(ts, "number")) {
				problems = append(problems, fmt.Sprintf("argument %q must be %s, not %s %s", k, strings.Join(ts, " or "), got, v))
				continue
			}
		}
		if len(p.Enum) > 0 {
			found := false
			for _, e := range p.Enum {
				if jsonEqual(e, v) {
					found = true
					break
				}
			}
			if !found {
				var allowed []string
				for _, e := range p.Enum {
					allowed = append(allowed, string(e))
				}
				problems = append(problems, fmt.Sprintf("argument %q must be one of %s, not %s", k, strings.Join(allowed, ", "), v))
			}
		}
	}
	for _, r := range schema.Required {
		if _, ok := args[r]; !ok {
			problems = append(problems, fmt.Sprintf("missing required argument %q", r))
		}
	}
	if len(problems) > 0 {
		return usagef("%s", strings.Join(problems, "; "))
	}
	return nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// buildPromptArgs turns KEY=VALUE words into prompt arguments (strings).
func buildPromptArgs(words []string) (map[string]string, error) {
	if len(words) == 0 {
		return nil, nil
	}
	args := map[string]string{}
	for _, w := range words {
		key, value, ok := strings.Cut(w, "=")
		if !ok || key == "" {
			return nil, usagef("prompt argument %q is not KEY=VALUE", w)
		}
		if _, dup := args[key]; dup {
			return nil, usagef("prompt argument %q given twice", key)
		}
		args[key] = value
	}
	return args, nil
}

// rootURI turns a --root value into a file:// URI and a name.
func rootURI(v string) (uri, name string, err error) {
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil {
			return "", "", fmt.Errorf("--root %q: %w", v, err)
		}
		if u.Scheme != "file" {
			return "", "", fmt.Errorf("--root %q: roots are file:// URIs", v)
		}
		return v, filepath.Base(filepath.FromSlash(u.Path)), nil
	}
	abs, err := filepath.Abs(v)
	if err != nil {
		return "", "", fmt.Errorf("--root %q: %w", v, err)
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter
	}
	return (&url.URL{Scheme: "file", Path: p}).String(), filepath.Base(abs), nil
}
