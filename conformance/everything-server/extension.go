package main

import (
	"context"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// An extension of the SDK's own, outside the conformance contract, so
// that clients of other SDKs can be checked calling a custom method
// (conformance/interop/ts/custom-method.mjs, with the TypeScript SDK's
// 2.x client):
//
//   - io.roundtrip/echo is advertised in capabilities.extensions with the
//     settings {"maxText":1024}.
//   - io.roundtrip/echo/say {text, times?} answers {text, times, echoed}
//     (echoed: text repeated times times, space-separated; times 1 to 5,
//     default 1) after sending times notifications
//     io.roundtrip/echo/heard {index, text} on the request's stream. It is
//     served on sessions of earlier revisions too (without the extension
//     check: those revisions have no extensions).
//   - io.roundtrip/echo/confirm {text} is a carrier method, targeted at
//     its text (Mcp-Name): it asks for confirmation with a form
//     elicitation {ok: boolean} and answers {text, confirmed}.
const (
	extEcho       = "io.roundtrip/echo"
	methodSay     = "io.roundtrip/echo/say"
	methodConfirm = "io.roundtrip/echo/confirm"
	noteHeard     = "io.roundtrip/echo/heard"
	maxEchoText   = 1024
)

type sayIn struct {
	Text  string `json:"text" jsonschema:"what to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how often, 1 to 5 (default 1)"`
}

type sayOut struct {
	Text   string `json:"text"`
	Times  int    `json:"times"`
	Echoed string `json:"echoed"`
}

type confirmIn struct {
	Text string `json:"text"`
}

type confirmOut struct {
	Text      string `json:"text"`
	Confirmed bool   `json:"confirmed"`
}

type confirmation struct {
	OK bool `json:"ok" jsonschema:"echo it?"`
}

func (e *everything) addExtension() {
	s := e.srv
	s.AddExtension(extEcho, map[string]any{"maxText": maxEchoText})
	mcp.AddTypedMethod(s, &mcp.MethodSpec{Name: methodSay, Extension: extEcho, Legacy: true},
		func(ctx context.Context, _ *mcp.ExtensionRequest, in sayIn) (sayOut, error) {
			if in.Times == 0 {
				in.Times = 1
			}
			if in.Times < 1 || in.Times > 5 || len(in.Text) > maxEchoText {
				return sayOut{}, mcp.NewError(mcp.CodeInvalidParams, fmt.Sprintf("times must be 1 to 5 and text at most %d bytes", maxEchoText), nil)
			}
			echoed := in.Text
			for i := range in.Times {
				if err := mcp.Notify(ctx, noteHeard, map[string]any{"index": i, "text": in.Text}); err != nil {
					return sayOut{}, err
				}
				if i > 0 {
					echoed += " " + in.Text
				}
			}
			return sayOut{Text: in.Text, Times: in.Times, Echoed: echoed}, nil
		})
	mcp.AddTypedMethod(s, &mcp.MethodSpec{Name: methodConfirm, Extension: extEcho, Carrier: true, TargetMember: "text", Legacy: true},
		func(ctx context.Context, req *mcp.ExtensionRequest, in confirmIn) (confirmOut, error) {
			c, err := mcp.Elicit[confirmation](ctx, "Echo "+req.Target+"?")
			if err != nil {
				return confirmOut{}, err
			}
			v, err := c.Value()
			if err != nil {
				return confirmOut{}, err
			}
			return confirmOut{Text: in.Text, Confirmed: v.OK}, nil
		})
}
