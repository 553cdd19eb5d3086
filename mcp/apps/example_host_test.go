package apps_test

import (
	"context"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/apps"
)

// A page, a tool the model calls and the page renders, and a tool only
// the page calls; then the host's side: it declares the extension, finds
// the tool's page, reads it, and builds the sandbox's policy from what
// the page declared.
func ExampleReadPage() {
	// #region apps-server
	srv := mcp.NewServer(mcp.Implementation{Name: "weather", Version: "1.0.0"},
		&mcp.ServerOptions{Capabilities: apps.ServerCapabilities(nil)})
	apps.AddResource(srv, &apps.Resource{
		URI: "ui://weather/view.html", Name: "weather-view",
		HTML: `<!DOCTYPE html><html><head><title>Weather</title></head><body>…</body></html>`,
		Meta: apps.ResourceMeta{CSP: &apps.CSP{ConnectDomains: []string{"https://api.example.com"}}},
	})
	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{Name: "weather"}, apps.ToolMeta{ResourceURI: "ui://weather/view.html"}),
		func(ctx context.Context, req *mcp.CallToolRequest, in City) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: in.City + ": sunny, 21 °C"}},
				StructuredContent: map[string]any{"city": in.City, "tempC": 21},
			}, nil
		})
	// The page's refresh button calls this one; the model never sees it.
	mcp.AddTypedTool(srv, apps.Link(&mcp.Tool{Name: "weather_refresh"}, apps.ToolMeta{
		ResourceURI: "ui://weather/view.html", Visibility: []apps.Visibility{apps.VisibleToApp},
	}), func(ctx context.Context, req *mcp.CallToolRequest, in City) (*mcp.CallToolResult, error) {
		return mcp.TextResult(in.City + ": sunny, 22 °C"), nil
	})
	// #endregion apps-server

	clientEnd, serverEnd := mcp.NewInMemoryTransports()
	go srv.ServeStream(context.Background(), serverEnd, serverEnd, nil)
	ctx := context.Background()

	// #region apps-host
	host := mcp.NewClient(mcp.NewStreamClientTransport(clientEnd, nil),
		&mcp.ClientOptions{Capabilities: apps.ClientCapabilities(nil)})
	defer host.Close()
	for tool, err := range host.Tools(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
		ui, err := apps.ToolUI(tool)
		if err != nil || ui == nil {
			continue // a plain tool (or a malformed link: used as a plain one)
		}
		fmt.Println(tool.Name, "model:", ui.VisibleTo(apps.VisibleToModel), "app:", ui.VisibleTo(apps.VisibleToApp))
		if !ui.VisibleTo(apps.VisibleToModel) {
			continue
		}
		res, err := host.ReadResource(ctx, ui.ResourceURI, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		page, err := apps.ReadPage(res, ui.ResourceURI, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("render", page.URI, "with connect-src", page.Meta.CSP.ConnectDomains)
	}
	// #endregion apps-host

	// Output:
	// weather model: true app: true
	// render ui://weather/view.html with connect-src [https://api.example.com]
	// weather_refresh model: false app: true
}
