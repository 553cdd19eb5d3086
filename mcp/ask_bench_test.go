package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// The three-round elicitation flow: the tool asks for a region, then (it
// depends on the answer) a size, then a confirmation; the fourth leg
// completes. Client and server talk over the in-memory transport, with
// the default sealing on.

type confirmForm struct {
	OK bool `json:"ok"`
}

func threeRoundServer() *Server {
	s := NewServer(Implementation{Name: "bench", Version: "1"}, nil)
	AddTypedTool(s, &Tool{Name: "provision"}, func(ctx context.Context, r *CallToolRequest, in struct {
		Name string `json:"name"`
	}) (*CallToolResult, error) {
		region, err := Elicit[Region](ctx, "Which region?")
		if err != nil {
			return nil, err
		}
		size, err := Elicit[Size](ctx, "How many GB in "+region.Content.Region+"?")
		if err != nil {
			return nil, err
		}
		ok, err := Elicit[confirmForm](ctx, fmt.Sprintf("Create %s with %d GB?", in.Name, size.Content.GB))
		if err != nil {
			return nil, err
		}
		if !ok.Content.OK {
			return TextResult("cancelled"), nil
		}
		return TextResult(fmt.Sprintf("%s: %s, %d GB", in.Name, region.Content.Region, size.Content.GB)), nil
	})
	return s
}

var threeRoundAnswers = map[string]map[string]any{
	"Which region?":             {"region": "eu-west-1"},
	"How many GB in eu-west-1?": {"gb": 20},
	"Create orders with 20 GB?": {"ok": true},
}

func threeRoundClient(tb testing.TB, s *Server) *Client {
	ce, se := NewInMemoryTransports()
	go s.ServeStream(context.Background(), se, se, nil)
	c := NewClient(NewStreamClientTransport(ce, nil), &ClientOptions{
		Elicitation: func(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
			a, ok := threeRoundAnswers[r.Message]
			if !ok {
				return nil, errors.New("unexpected question " + r.Message)
			}
			return &ElicitResult{Action: ElicitAccept, Content: a}, nil
		},
	})
	tb.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkThreeRoundElicitation(b *testing.B) {
	c := threeRoundClient(b, threeRoundServer())
	ctx := context.Background()
	args := map[string]any{"name": "orders"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.CallTool(ctx, "provision", args, nil)
		if err != nil || res.Content[0].(*TextContent).Text != "orders: eu-west-1, 20 GB" {
			b.Fatalf("%v %v", res, err)
		}
	}
}

// TestStateGrowsWithItsAnswersOnly drives the three-round flow by hand and
// checks that the requestState after round n is no larger than the
// answers it carries (as the client sent them) plus 200 bytes.
func TestStateGrowsWithItsAnswersOnly(t *testing.T) {
	t.Parallel()
	c := threeRoundClient(t, threeRoundServer())
	ctx := context.Background()
	opts := &CallOptions{Manual: true}
	_, err := c.CallTool(ctx, "provision", map[string]any{"name": "orders"}, opts)
	carried := 0
	for round := 1; ; round++ {
		var pe *PendingCallError
		if !errors.As(err, &pe) {
			if err != nil {
				t.Fatal(err)
			}
			if round != 4 {
				t.Fatalf("completed after %d rounds", round-1)
			}
			return
		}
		state := pe.Call.RequestState
		t.Logf("round %d: requestState %d bytes, carrying %d bytes of answers", round, len(state), carried)
		if len(state) > carried+200 {
			t.Errorf("round %d: state of %d bytes exceeds %d bytes of answers + 200", round, len(state), carried)
		}
		responses := InputResponses{}
		for k, ir := range pe.Call.InputRequests {
			e := ir.(*ElicitRequest)
			raw, _ := json.Marshal(&ElicitResult{Action: ElicitAccept, Content: threeRoundAnswers[e.Message]})
			responses[k] = raw
			carried += len(raw)
		}
		_, err = c.Resume(ctx, pe.Call, responses, opts)
	}
}

func TestCompactAnswersRoundTrip(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		`{"action":"accept","content":{"region":"eu"}}`,
		`{"action":"decline"}`,
		`{"action":"cancel"}`,
		`{"action":"accept","content":{"a":1},"_meta":{"x":1}}`,
		`{"roots":[{"uri":"file:///a"}]}`,
		`{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`,
	} {
		id := [8]byte{1, 2, 3}
		prior, _ := decodeAskState(encodeAskState([]storedAnswer{{id, json.RawMessage(raw)}}, nil))
		var a, b any
		json.Unmarshal([]byte(raw), &a)
		json.Unmarshal(prior[id], &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s came back as %s", raw, prior[id])
		}
	}
}
