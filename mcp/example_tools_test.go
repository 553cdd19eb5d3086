package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// #region typed-tool
// ForecastArgs are the tool's arguments: the input schema is inferred
// from the struct (json names, omitempty for optional members,
// jsonschema descriptions).
type ForecastArgs struct {
	City string `json:"city" jsonschema:"the city to forecast"`
	Unit string `json:"unit,omitempty" jsonschema:"celsius (the default) or fahrenheit"`
}

// Forecast is the tool's structured output: the output schema is
// inferred from it, and each result carries it as structuredContent
// (and as a text block of its JSON, for clients that read text only).
type Forecast struct {
	City string  `json:"city"`
	High float64 `json:"high"`
	Sky  string  `json:"sky"`
}

// #endregion typed-tool

// A typed tool with structured output: the arguments arrive decoded and
// validated, the result is a Go value.
func ExampleAddTypedTool() {
	// #region typed-tool-register
	srv := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "forecast", Description: "Tomorrow's weather"},
		func(ctx context.Context, req *mcp.CallToolRequest, in ForecastArgs) (Forecast, error) {
			high := 21.5
			if in.Unit == "fahrenheit" {
				high = high*9/5 + 32
			}
			return Forecast{City: in.City, High: high, Sky: "clear"}, nil
		})
	// #endregion typed-tool-register

	client := connect(srv)
	defer client.Close()
	ctx := context.Background()
	// #region typed-tool-call
	res, err := client.CallTool(ctx, "forecast", ForecastArgs{City: "Lisbon", Unit: "fahrenheit"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var f Forecast
	if err := json.Unmarshal(res.StructuredContent.(json.RawMessage), &f); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %.1f, %s\n", f.City, f.High, f.Sky)
	// #endregion typed-tool-call

	// Arguments that do not fit the schema never reach the handler: the
	// model gets an isError result that names the problem.
	res, _ = client.CallTool(ctx, "forecast", map[string]any{"city": 42}, nil)
	fmt.Println("isError:", res.IsError)
	for t, err := range client.Tools(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		schema, _ := json.Marshal(t.OutputSchema)
		fmt.Println(t.Name, "has an output schema:", strings.Contains(string(schema), `"high"`))
	}
	// Output:
	// Lisbon: 70.7, clear
	// isError: true
	// forecast has an output schema: true
}

// A low-level tool: the handler gets the raw arguments and builds the
// result itself. ErrorResult reports a failure the model should see; a
// returned error becomes a JSON-RPC error instead.
func ExampleServer_AddTool() {
	// #region low-level-tool
	srv := mcp.NewServer(mcp.Implementation{Name: "echo", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{
		Name:        "shout",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(req.Arguments, &in); err != nil || in.Text == "" {
			return mcp.ErrorResult("say something"), nil
		}
		return mcp.TextResult(strings.ToUpper(in.Text) + "!"), nil
	})
	// #endregion low-level-tool

	client := connect(srv)
	defer client.Close()
	res, err := client.CallTool(context.Background(), "shout", map[string]any{"text": "hello"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// HELLO!
}

// A long tool reports progress; the client asks for it with OnProgress.
// Over Streamable HTTP the response becomes an SSE stream once the first
// notification is sent.
func ExampleReportProgress() {
	srv := mcp.NewServer(mcp.Implementation{Name: "indexer", Version: "1.0.0"}, nil)
	// #region progress-server
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "index"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, error) {
		const files = 3
		for i := 1; i <= files; i++ {
			// ... index file i ...
			if err := mcp.ReportProgress(ctx, float64(i), files, fmt.Sprintf("file %d of %d", i, files)); err != nil {
				return nil, err
			}
		}
		return mcp.TextResult("indexed"), nil
	})
	// #endregion progress-server

	client := connect(srv)
	defer client.Close()
	// #region progress-client
	res, err := client.CallTool(context.Background(), "index", nil, &mcp.CallOptions{
		OnProgress: func(p *mcp.ProgressParams) {
			fmt.Printf("progress %v/%v: %s\n", p.Progress, *p.Total, p.Message)
		},
	})
	// #endregion progress-client
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// progress 1/3: file 1 of 3
	// progress 2/3: file 2 of 3
	// progress 3/3: file 3 of 3
	// indexed
}

// connect serves srv over an in-memory pipe and returns a client of it.
func connect(srv *mcp.Server, opts ...*mcp.ClientOptions) *mcp.Client {
	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)
	var o *mcp.ClientOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	return mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil), o)
}
