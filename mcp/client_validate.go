package mcp

import (
	"bytes"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The client's side of output validation: the outputSchema of each tool
// from the last tools/list, compiled on first use, and the check of a
// result against it (ClientOptions.SkipOutputValidation turns it off).
// The validator itself is shared with the server: wire_outputschema.go.

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
