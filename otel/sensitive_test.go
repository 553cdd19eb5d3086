package otel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// secret marks every value the application exchanges in the test; none
// may show up in telemetry.
const secret = "s3cr3t"

// Nothing the application exchanges — arguments, answers, request
// state, results, extra _meta — is in any span (name, attribute, event,
// link, status) or any metric point, in either era.
func TestNothingSensitiveInAnyAttribute(t *testing.T) {
	for _, era := range []struct {
		name string
		mode mcp.ClientMode
	}{{"2026-07-28", mcp.ModeAuto}, {"2025-11-25", mcp.ModeLegacy}} {
		t.Run(era.name, func(t *testing.T) {
			r := newRig(t)
			s := newTestServer(r.opts, nil)
			addVault(s)
			elicit := func(ctx context.Context, q *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"pin": secret + "-answer-4711"}}, nil
			}
			c := httpClient(t, s, InstrumentClient(&mcp.ClientOptions{Mode: era.mode, Elicitation: elicit}, r.opts))
			ctx := mcp.WithMeta(testContext(t), mcp.Meta{"x-api-key": secret + "-meta-ctx"})
			args := map[string]any{"password": secret + "-arg-1234", "card": "4111-" + secret}
			res, err := c.CallTool(ctx, "vault", args, &mcp.CallOptions{Meta: mcp.Meta{"x-session-token": secret + "-meta-call"}})
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(res); !strings.Contains(string(b), secret+"-result") {
				t.Fatalf("the tool did not see its secrets: %s", b)
			}
			if _, err := c.GetPrompt(ctx, "greet", map[string]string{"topic": secret + "-prompt-arg"}, nil); err != nil {
				t.Fatal(err)
			}
			spans := r.ended()
			if len(spans) < 3 {
				t.Fatalf("only %d spans", len(spans))
			}
			for _, s := range spans {
				for _, where := range spanTexts(s) {
					if strings.Contains(where, secret) {
						t.Errorf("span %s %q holds a secret: %s", s.SpanKind, s.Name, where)
					}
				}
			}
			rm := r.metrics(t)
			if len(rm.ScopeMetrics) == 0 {
				t.Fatal("no metrics")
			}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, set := range pointSets(m) {
						for _, kv := range set.ToSlice() {
							if strings.Contains(kv.Value.String(), secret) {
								t.Errorf("metric %s holds a secret: %s=%s", m.Name, kv.Key, kv.Value.String())
							}
						}
					}
				}
			}
		})
	}
}

// addVault registers "vault": a low-level handler whose first round
// keeps the arguments in its plaintext state and asks for a PIN, and
// whose second returns all of it, so that arguments, state, answer and
// result all hold secrets.
func addVault(s *mcp.Server) {
	s.AddTool(&mcp.Tool{Name: "vault", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, r *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		pin, err := r.InputResponses.Elicit("pin")
		if err != nil {
			return &mcp.InputRequiredResult{
				InputRequests: map[string]mcp.InputRequest{"pin": &mcp.ElicitRequest{Message: "PIN?", RequestedSchema: map[string]any{
					"type": "object", "properties": map[string]any{"pin": map[string]any{"type": "string"}}, "required": []string{"pin"},
				}}},
				RequestState: secret + "-state-" + string(r.Arguments),
			}, nil
		}
		if !strings.HasPrefix(r.RequestState, secret+"-state-") {
			return nil, fmt.Errorf("state lost: %q", r.RequestState)
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: secret + "-result " + fmt.Sprint(pin.Content["pin"])}},
			StructuredContent: map[string]any{"token": secret + "-result-structured"},
		}, nil
	})
}

// spanTexts is everything of a span that telemetry backends show.
func spanTexts(s tracetest.SpanStub) []string {
	out := []string{"name " + s.Name, "status " + s.Status.Description}
	kvs := func(what string, attrs []attribute.KeyValue) {
		for _, kv := range attrs {
			out = append(out, what+" "+string(kv.Key)+"="+kv.Value.String())
		}
	}
	kvs("attribute", s.Attributes)
	for _, e := range s.Events {
		out = append(out, "event "+e.Name)
		kvs("event attribute", e.Attributes)
	}
	for _, l := range s.Links {
		kvs("link attribute", l.Attributes)
	}
	if s.Resource != nil {
		kvs("resource", s.Resource.Attributes())
	}
	return out
}
