package pin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// Pins are the tool definitions a client approved for one server, by
// tool name. The zero value is empty and ready to use; a Pins is safe
// for concurrent use. It marshals to {"tools":{NAME:Pin,...}}, and
// UnmarshalJSON reads that back (checking each digest).
type Pins struct {
	mu    sync.Mutex
	tools map[string]Pin
}

// Pin is one approved tool definition.
type Pin struct {
	// Digest is "sha256:" and the hex SHA-256 of Definition.
	Digest string `json:"digest"`
	// Definition is the canonical JSON of the members a user approves:
	// name, title, description, inputSchema, outputSchema, annotations.
	Definition json.RawMessage `json:"definition"`
}

// Tool returns the pinned definition as a Tool (schemas as the
// json.RawMessage pinned).
func (p Pin) Tool() (*mcp.Tool, error) { return decodeTool(p.Definition) }

// New returns the Pin of t's current definition.
func New(t *mcp.Tool) (Pin, error) {
	def, err := definition(t)
	if err != nil {
		return Pin{}, err
	}
	return Pin{Digest: digest(def), Definition: def}, nil
}

// Set pins t (replacing what was pinned under its name).
func (p *Pins) Set(t *mcp.Tool) error {
	pin, err := New(t)
	if err != nil {
		return err
	}
	p.put(t.Name, pin)
	return nil
}

func (p *Pins) put(name string, pin Pin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tools == nil {
		p.tools = make(map[string]Pin)
	}
	p.tools[name] = pin
}

// Get returns the pin of the tool name.
func (p *Pins) Get(name string) (Pin, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pin, ok := p.tools[name]
	return pin, ok
}

// Delete forgets the pin of the tool name.
func (p *Pins) Delete(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.tools, name)
}

// Names returns the pinned tool names, sorted.
func (p *Pins) Names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.tools))
}

type pinsJSON struct {
	Tools map[string]Pin `json:"tools"`
}

// MarshalJSON writes {"tools":{NAME:{"digest":…,"definition":…}}}, names
// sorted.
func (p *Pins) MarshalJSON() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := pinsJSON{Tools: p.tools}
	if v.Tools == nil {
		v.Tools = map[string]Pin{}
	}
	return json.Marshal(v)
}

// UnmarshalJSON replaces p's pins with those of b. A pin whose digest is
// not that of its definition, or whose definition names another tool, is
// an error (the file was edited or damaged): nothing is replaced then.
func (p *Pins) UnmarshalJSON(b []byte) error {
	var v pinsJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	tools := make(map[string]Pin, len(v.Tools))
	for name, pin := range v.Tools {
		t, err := decodeTool(pin.Definition)
		if err != nil {
			return fmt.Errorf("pin: tool %q: %w", name, err)
		}
		if t.Name != name {
			return fmt.Errorf("pin: tool %q: its definition names %q", name, t.Name)
		}
		fresh, err := New(t)
		if err != nil {
			return fmt.Errorf("pin: tool %q: %w", name, err)
		}
		if fresh.Digest != pin.Digest {
			return fmt.Errorf("pin: tool %q: the digest is not that of its definition", name)
		}
		tools[name] = fresh
	}
	p.mu.Lock()
	p.tools = tools
	p.mu.Unlock()
	return nil
}

// pinned is the part of a tool a user approves.
type pinned struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// fields names the pinned members, in the order a diff shows them.
var fields = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}

// definition is the canonical JSON of t's pinned members: strings as
// their decoded value (re-encoded by encoding/json without HTML
// escaping), schemas as the text the server sent up to white space and
// member order (requeststate.AppendCanonical), annotations as the
// members ToolAnnotations knows ({} is the same as none).
func definition(t *mcp.Tool) (json.RawMessage, error) {
	if t == nil {
		return nil, errors.New("pin: nil tool")
	}
	v := pinned{Name: t.Name, Title: t.Title, Description: t.Description}
	var err error
	if v.InputSchema, err = rawJSON(t.InputSchema); err != nil {
		return nil, fmt.Errorf("pin: tool %q: inputSchema: %w", t.Name, err)
	}
	if v.OutputSchema, err = rawJSON(t.OutputSchema); err != nil {
		return nil, fmt.Errorf("pin: tool %q: outputSchema: %w", t.Name, err)
	}
	if t.Annotations != nil {
		if v.Annotations, err = rawJSON(t.Annotations); err != nil {
			return nil, err
		}
		if string(v.Annotations) == "{}" {
			v.Annotations = nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("pin: tool %q: %w", t.Name, err)
	}
	out, err := requeststate.AppendCanonical(nil, bytes.TrimRight(buf.Bytes(), "\n"))
	if err != nil {
		return nil, fmt.Errorf("pin: tool %q: %w", t.Name, err)
	}
	return out, nil
}

// rawJSON returns v as JSON text: a json.RawMessage as it is (nil when
// empty), anything else marshalled.
func rawJSON(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if len(x) == 0 {
			return nil, nil
		}
		if !json.Valid(x) {
			return nil, errors.New("invalid JSON")
		}
		return x, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func digest(def []byte) string {
	sum := sha256.Sum256(def)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// decodeTool decodes a tool as the Client does: schemas kept as the
// exact JSON (json.RawMessage).
func decodeTool(raw []byte) (*mcp.Tool, error) {
	type alias mcp.Tool
	t := new(mcp.Tool)
	w := struct {
		*alias
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}{alias: (*alias)(t)}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.InputSchema != nil {
		t.InputSchema = w.InputSchema
	}
	if w.OutputSchema != nil {
		t.OutputSchema = w.OutputSchema
	}
	return t, nil
}
