package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"testing"
)

// Client benchmarks over the in-memory pair. The *Server variants talk
// to a real Server in the same process (their allocations include the
// server's); the *Canned variants talk to a responder that writes
// prepared bytes without allocating, so they measure the client alone.

var benchArgs = json.RawMessage(`{"text":"hello"}`)

func benchElicit(ctx context.Context, r *ElicitRequest) (*ElicitResult, error) {
	return &ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
}

func benchCall(b *testing.B, c *Client, tool string) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.CallTool(ctx, tool, benchArgs, nil)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError {
			b.Fatalf("%+v", res)
		}
	}
}

// BenchmarkClientCallToolServer is one tools/call, client and server.
func BenchmarkClientCallToolServer(b *testing.B) {
	benchCall(b, memClient(b, benchServer(), nil), "echo")
}

// BenchmarkClientTwoLegCallServer is one call whose tool first asks for an
// elicitation, answered automatically: two requests, client and server.
func BenchmarkClientTwoLegCallServer(b *testing.B) {
	benchCall(b, memClient(b, newTestServer(b, nil), &ClientOptions{Elicitation: benchElicit}), "ask")
}

// cannedServer answers each request line with a prepared result: irr
// for a first leg (no inputResponses) when set, complete otherwise.
func cannedServer(b testing.TB, irr, complete string) *Client {
	ce, se := NewInMemoryTransports()
	go serveCanned(se, se, irr, complete)
	c := NewClient(NewStreamClientTransport(ce, nil), &ClientOptions{Elicitation: benchElicit})
	b.Cleanup(func() { c.Close(); se.Close() })
	return c
}

// serveCanned answers each request line read from r with complete (irr
// first, when set, until the request carries inputResponses) on w.
func serveCanned(r io.Reader, w io.Writer, irr, complete string) {
	retry := []byte(`"inputResponses"`)
	serveLines(r, w, func(line []byte) string {
		if irr != "" && !bytes.Contains(line, retry) {
			return irr
		}
		return complete
	})
}

// serveLines answers each request line read from r with the result
// answer gives for it, on w, until r or w fails.
func serveLines(r io.Reader, w io.Writer, answer func(line []byte) string) {
	br := bufio.NewReaderSize(r, 64<<10)
	out := make([]byte, 0, 4096)
	idKey := []byte(`"id":`)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		i := bytes.Index(line, idKey) + len(idKey)
		j := i + bytes.IndexByte(line[i:], ',')
		out = append(out[:0], `{"jsonrpc":"2.0","id":`...)
		out = append(out, line[i:j]...)
		out = append(out, `,"result":`...)
		out = append(out, answer(line)...)
		out = append(out, "}\n"...)
		if _, err := w.Write(out); err != nil {
			return
		}
	}
}

const (
	cannedComplete = `{"resultType":"complete","content":[{"type":"text","text":"hello"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1"}}}`
	cannedIRR      = `{"resultType":"input_required","inputRequests":{"name":{"method":"elicitation/create","params":{"mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}},"requestState":"c3RhdGUtb3BhcXVlLXRva2Vu"}`
)

// BenchmarkClientCallToolCanned is the client side of one tools/call.
func BenchmarkClientCallToolCanned(b *testing.B) {
	benchCall(b, cannedServer(b, "", cannedComplete), "echo")
}

// BenchmarkClientTwoLegCallCanned is the client side of one two-leg call
// (elicitation answered automatically).
func BenchmarkClientTwoLegCallCanned(b *testing.B) {
	benchCall(b, cannedServer(b, cannedIRR, cannedComplete), "ask")
}

// TestCannedServerRoundTrip keeps the canned responder honest.
func TestCannedServerRoundTrip(t *testing.T) {
	t.Parallel()
	ce, se := NewInMemoryTransports()
	defer se.Close()
	go func() {
		br := bufio.NewReader(se)
		for n := 0; ; n++ {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var in struct{ ID int64 }
			json.Unmarshal(line, &in)
			res := cannedIRR
			if bytes.Contains(line, []byte(`"inputResponses"`)) {
				res = cannedComplete
			}
			io.WriteString(se, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(in.ID, 10)+`,"result":`+res+"}\n")
		}
	}()
	c := NewClient(NewStreamClientTransport(ce, nil), &ClientOptions{Elicitation: benchElicit})
	defer c.Close()
	res, err := c.CallTool(context.Background(), "ask", benchArgs, nil)
	if err != nil || resultText(t, res) != "hello" {
		t.Fatalf("%+v %v", res, err)
	}
}

// BenchmarkClientTwoLegCallCannedObserved is BenchmarkClientTwoLegCallCanned
// with what a tracer does: middleware that adds a traceparent to each
// leg and registers an OnEnd on the call, plus CallOptions.Meta.
func BenchmarkClientTwoLegCallCannedObserved(b *testing.B) {
	c := cannedServer(b, cannedIRR, cannedComplete)
	type spanKey struct{}
	c.handler = c.chainClient([]ClientMiddleware{func(next ClientHandler) ClientHandler {
		return func(ctx context.Context, req *ClientRequest) (json.RawMessage, error) {
			if ci := req.Call; ci != nil && ci.Value(spanKey{}) == nil {
				ci.SetValue(spanKey{}, true)
				ci.OnEnd(func(int, error) {})
			}
			req.Meta["traceparent"] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
			return next(ctx, req)
		}
	}})
	ctx := context.Background()
	opts := &CallOptions{Meta: Meta{"baggage": "tenant=acme"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CallTool(ctx, "ask", benchArgs, opts); err != nil {
			b.Fatal(err)
		}
	}
}
