package apps_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

type City struct {
	City string `json:"city"`
}

// A server with one page and a tool linked to it. The tool answers every
// client with text; a host that renders the page gets a shorter one.
func Example() {
	srv := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"},
		&mcp.ServerOptions{Capabilities: apps.ServerCapabilities(nil)})
	apps.AddResource(srv, &apps.Resource{
		URI: "ui://weather/view.html", Name: "weather-view",
		HTML: `<!DOCTYPE html><html><head><title>Weather</title></head><body>…</body></html>`,
		Meta: apps.ResourceMeta{CSP: &apps.CSP{ConnectDomains: []string{"https://api.example.com"}}},
	})
	tool := apps.Link(&mcp.Tool{Name: "weather", Description: "Today's weather"},
		apps.ToolMeta{ResourceURI: "ui://weather/view.html"})
	mcp.AddTypedTool(srv, tool, func(ctx context.Context, req *mcp.CallToolRequest, in City) (*mcp.CallToolResult, error) {
		text := in.City + ": sunny, 21 °C, wind 10 km/h from the west"
		if apps.ClientSupports(req.Meta.ClientCapabilities) {
			text = in.City + ": sunny, 21 °C" // the page shows the rest
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: text}},
			StructuredContent: map[string]any{"city": in.City, "tempC": 21, "conditions": "sunny"},
		}, nil
	})
	b, _ := json.Marshal(tool.Meta)
	fmt.Println(string(b))
	// Output: {"ui":{"resourceUri":"ui://weather/view.html"},"ui/resourceUri":"ui://weather/view.html"}
}

// The policy a host enforces on a page that declared one API origin.
func ExampleCSP_Policy() {
	csp := &apps.CSP{ConnectDomains: []string{"https://api.example.com"}}
	fmt.Println(csp.Policy())
	// Output: default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; connect-src 'self' https://api.example.com; img-src 'self' data:; font-src 'self'; media-src 'self' data:; frame-src 'none'; object-src 'none'; base-uri 'self'
}

// What a host declares, and what a handler sees of it.
func ExampleClientCapabilities() {
	caps := apps.ClientCapabilities(nil)
	fmt.Println(string(caps.Extensions[apps.ExtensionID]), apps.ClientSupports(*caps))
	// Output: {"mimeTypes":["text/html;profile=mcp-app"]} true
}
