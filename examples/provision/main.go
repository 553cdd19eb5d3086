// Command provision demonstrates a multi round-trip tool call end to end:
// a server whose tool asks the user two questions in straight-line code,
// and a client that answers them, talking Streamable HTTP on loopback.
// Each leg of the call is printed as it crosses the wire.
//
//	go run ./examples/provision
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ProvisionArgs are the tool's arguments; the schema is inferred.
type ProvisionArgs struct {
	Name string `json:"name" jsonschema:"the database name"`
}

// Region and Size are the two forms the tool asks the user to fill.
type Region struct {
	Region string `json:"region" mcp:"enum=eu-west-1|us-east-1|ap-south-1"`
}

type Size struct {
	GB int `json:"gb" jsonschema:"storage in GB"`
}

// provision asks which region, then (knowing it) how much storage. The
// body runs again on every round: it only asks, it does nothing else
// until both answers are in.
func provision(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
	region, err := mcp.Elicit[Region](ctx, "Which region should the database live in?")
	if err != nil {
		return nil, err
	}
	r, err := region.Value() // a decline becomes an isError result
	if err != nil {
		return nil, err
	}
	size, err := mcp.Elicit[Size](ctx, fmt.Sprintf("How many GB for %q in %s?", in.Name, r.Region))
	if err != nil {
		return nil, err
	}
	s, err := size.Value()
	if err != nil {
		return nil, err
	}
	return mcp.TextResult(fmt.Sprintf("Provisioned %q in %s with %d GB.", in.Name, r.Region, s.GB)), nil
}

func main() {
	log.SetFlags(0)
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run starts the server, makes the call and prints each leg to out.
func run(out io.Writer) error {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision", Description: "Provision a database. Asks which region and how large."}, provision)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// Header, body and idle timeouts bound what a slow or silent client
	// costs; no WriteTimeout, since SSE responses stay open (the handler
	// gives each SSE write its own deadline).
	hs := &http.Server{Handler: mcp.NewHTTPHandler(srv, nil),
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	go hs.Serve(ln)
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/mcp"
	fmt.Fprintln(out, "server listening on", url)

	// The client answers each form; the same callback would answer a
	// live elicitation/create from a 2025-11-25 server.
	answers := map[string]any{"region": "eu-west-1", "gb": 20}
	client := mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{
		HTTPClient: &http.Client{Transport: printer{http.DefaultTransport, out}},
	}), &mcp.ClientOptions{
		Info: mcp.Implementation{Name: "provision-demo", Version: "1.0.0"},
		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			var schema struct {
				Properties map[string]any `json:"properties"`
			}
			b, _ := json.Marshal(r.RequestedSchema)
			json.Unmarshal(b, &schema)
			content := map[string]any{}
			for field := range schema.Properties {
				content[field] = answers[field]
			}
			fmt.Fprintf(out, "   user asked %q → answers %v\n", r.Message, content)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}, nil
		},
	})
	defer client.Close()

	res, err := client.CallTool(context.Background(), "provision", map[string]any{"name": "orders"}, nil)
	if err != nil {
		return err
	}
	text := res.Content[0].(*mcp.TextContent).Text
	fmt.Fprintln(out, "result:", text)
	if res.IsError || !strings.Contains(text, "eu-west-1 with 20 GB") {
		return fmt.Errorf("unexpected result %q", text)
	}
	return nil
}

// printer prints each leg of the call: what the client sends and what the
// server answers.
type printer struct {
	next http.RoundTripper
	out  io.Writer
}

func (p printer) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Method string `json:"method"`
		Params struct {
			Name           string         `json:"name"`
			InputResponses map[string]any `json:"inputResponses"`
			RequestState   string         `json:"requestState"`
		} `json:"params"`
	}
	json.Unmarshal(body, &req)
	line := fmt.Sprintf("→ %s %s", req.Method, req.Params.Name)
	if req.Params.InputResponses != nil {
		line += fmt.Sprintf(" with %d answer(s)", len(req.Params.InputResponses))
	}
	if req.Params.RequestState != "" {
		line += fmt.Sprintf(", echoing the %d-byte sealed state", len(req.Params.RequestState))
	}
	fmt.Fprintln(p.out, line)
	resp, err := p.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(bytes.NewReader(out))
	var msg struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
		Error *mcp.Error `json:"error"`
	}
	json.Unmarshal(out, &msg)
	switch {
	case msg.Error != nil:
		fmt.Fprintf(p.out, "← error %d %s\n", msg.Error.Code, msg.Error.Message)
	case msg.Result.ResultType == "input_required":
		keys := make([]string, 0, len(msg.Result.InputRequests))
		for k := range msg.Result.InputRequests {
			keys = append(keys, k)
		}
		fmt.Fprintf(p.out, "← input_required: %d question(s) %v, requestState %q…\n", len(keys), keys, msg.Result.RequestState[:min(24, len(msg.Result.RequestState))])
	default:
		fmt.Fprintf(p.out, "← %s\n", msg.Result.ResultType)
	}
	return resp, nil
}
