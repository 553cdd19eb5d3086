// Command everything-client is the client under test of the official MCP
// conformance suite (@modelcontextprotocol/conformance), written against
// the public API of package mcp, for both protocol eras.
//
// The suite runs it as
//
//	MCP_CONFORMANCE_SCENARIO=<scenario> MCP_CONFORMANCE_PROTOCOL_VERSION=<version> everything-client <server URL>
//
// (the URL is the last argument; MCP_CONFORMANCE_CONTEXT may hold JSON
// data for the scenario). The auth/* scenarios run the default flow
// (list the tools, call each) through an OAuth client (package auth)
// whose authorization step is headless: see auth.go. The version picks the era: 2025-11-25 and
// earlier open a legacy session (initialize), later ones speak
// 2026-07-28; without it the client probes (mcp.ModeAuto). It does what
// the scenario asks of a client and exits 0 on success, 1 with the error
// on stderr otherwise.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/skills"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: MCP_CONFORMANCE_SCENARIO=<scenario> everything-client <server URL>")
		os.Exit(2)
	}
	url := os.Args[len(os.Args)-1]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	slog.SetDefault(logger)

	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	mode, version := era(os.Getenv("MCP_CONFORMANCE_PROTOCOL_VERSION"))
	var httpOpts *mcp.HTTPClientOptions
	if strings.HasPrefix(scenario, "auth/") {
		hc, err := authClient(scenario, logger)
		if err != nil {
			fmt.Fprintf(os.Stderr, "everything-client: scenario %q: %v\n", scenario, err)
			os.Exit(1)
		}
		httpOpts = &mcp.HTTPClientOptions{HTTPClient: hc}
	}
	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, httpOpts), skills.Declare(&mcp.ClientOptions{
		Info:            mcp.Implementation{Name: "roundtrip-everything-client", Version: "0.1.0"},
		Mode:            mode,
		ProtocolVersion: version,
		Elicitation:     elicit,
		//lint:ignore SA1019 sampling, deprecated in 2026-07-28, is still served to the revisions that have it
		Sampling: sample,
		//lint:ignore SA1019 roots, deprecated in 2026-07-28, is still served to the revisions that have it
		Roots:  roots,
		Logger: logger,
	}))
	defer c.Close()
	if err := run(ctx, c, scenario); err != nil {
		fmt.Fprintf(os.Stderr, "everything-client: scenario %q: %v\n", scenario, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "everything-client: scenario %q done\n", scenario)
}

// era picks the client's mode from the version the suite runs at: that
// exact version when the client speaks it (the legacy ones through
// initialize), the latest legacy one for older revisions, the probe
// when none is given.
func era(v string) (mcp.ClientMode, string) {
	switch {
	case v == "":
		return mcp.ModeAuto, ""
	case v == mcp.LegacyProtocolVersion || v == "2025-06-18" || v == mcp.LatestProtocolVersion:
		return mcp.ModePinned, v
	case v < mcp.LegacyProtocolVersion:
		return mcp.ModeLegacy, ""
	}
	return mcp.ModePinned, mcp.LatestProtocolVersion
}

func run(ctx context.Context, c *mcp.Client, scenario string) error {
	switch scenario {
	case "initialize":
		// The handshake, then a first request on the session.
		if err := c.Connect(ctx); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "everything-client: session at %s\n", c.ProtocolVersion())
		_, err := listTools(ctx, c)
		return err
	case "tools_call":
		if _, err := listTools(ctx, c); err != nil {
			return err
		}
		return call(ctx, c, "add_numbers", map[string]any{"a": 5, "b": 3})
	case "request-metadata":
		// The first request is refused with -32022; the client retries
		// with a listed version. Every request carries _meta.
		if _, err := c.Discover(ctx); err != nil {
			return err
		}
		_, err := listTools(ctx, c)
		return err
	case "sep-2322-client-request-state":
		return callAllConcurrently(ctx, c)
	case "http-standard-headers":
		return exerciseEverything(ctx, c)
	case "http-custom-headers":
		return customHeaderCalls(ctx, c)
	case "json-schema-ref-no-deref":
		// List tools (whose schemas carry a network $ref) and nothing
		// else: the client keeps schemas as raw JSON and never fetches.
		_, err := listTools(ctx, c)
		return err
	case "json-schema-2020-12-preservation":
		return echoSchema(ctx, c)
	case "sep-2640-client-no-prefetch":
		// Enumerate, load nothing: no file is read before a skill is.
		_, err := skills.NewClient(c, nil).List(ctx)
		return err
	case "sep-2640-client-verify-digest", "sep-2640-client-verify-size", "sep-2640-client-verify-frontmatter":
		return loadSkills(ctx, c)
	default:
		// http-invalid-tool-headers and anything unknown: call every
		// tool the client keeps (tools with invalid x-mcp-header
		// annotations are dropped from its view).
		tools, err := listTools(ctx, c)
		if err != nil {
			return err
		}
		for _, t := range tools {
			if err := call(ctx, c, t.Name, argumentsFor(t.InputSchema)); err != nil {
				return err
			}
		}
		return nil
	}
}

func listTools(ctx context.Context, c *mcp.Client) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range c.Tools(ctx) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		out = append(out, t)
	}
	return out, nil
}

func call(ctx context.Context, c *mcp.Client, name string, args any) error {
	res, err := c.CallTool(ctx, name, args, nil)
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	b, _ := json.Marshal(res)
	fmt.Printf("%s -> %s\n", name, b)
	return nil
}

// callAllConcurrently calls every listed tool at once: the multi
// round-trip flows and the unrelated call must not leak into each other.
func callAllConcurrently(ctx context.Context, c *mcp.Client) error {
	tools, err := listTools(ctx, c)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(tools))
	for i, t := range tools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = call(ctx, c, t.Name, argumentsFor(t.InputSchema))
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// exerciseEverything calls every tool, reads every resource and gets
// every prompt.
func exerciseEverything(ctx context.Context, c *mcp.Client) error {
	tools, err := listTools(ctx, c)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if err := call(ctx, c, t.Name, argumentsFor(t.InputSchema)); err != nil {
			return err
		}
	}
	for r, err := range c.Resources(ctx) {
		if err != nil {
			return fmt.Errorf("resources/list: %w", err)
		}
		if _, err := c.ReadResource(ctx, r.URI, nil); err != nil {
			return fmt.Errorf("resources/read %s: %w", r.URI, err)
		}
	}
	for p, err := range c.Prompts(ctx) {
		if err != nil {
			return fmt.Errorf("prompts/list: %w", err)
		}
		args := map[string]string{}
		for _, a := range p.Arguments {
			args[a.Name] = "test"
		}
		if _, err := c.GetPrompt(ctx, p.Name, args, nil); err != nil {
			return fmt.Errorf("prompts/get %s: %w", p.Name, err)
		}
	}
	return nil
}

// customHeaderCalls makes the tool calls MCP_CONFORMANCE_CONTEXT lists,
// after tools/list taught the client the x-mcp-header annotations.
func customHeaderCalls(ctx context.Context, c *mcp.Client) error {
	var sc struct {
		ToolCalls []struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"toolCalls"`
	}
	if err := json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &sc); err != nil {
		return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	if _, err := listTools(ctx, c); err != nil {
		return err
	}
	for _, tc := range sc.ToolCalls {
		if err := call(ctx, c, tc.Name, tc.Arguments); err != nil {
			return err
		}
	}
	return nil
}

// echoSchema sends the inputSchema of json_schema_2020_12_tool back,
// verbatim, through json_schema_echo.
func echoSchema(ctx context.Context, c *mcp.Client) error {
	tools, err := listTools(ctx, c)
	if err != nil {
		return err
	}
	for _, t := range tools {
		if t.Name == "json_schema_2020_12_tool" {
			return call(ctx, c, "json_schema_echo", map[string]any{"schema": t.InputSchema})
		}
	}
	return errors.New("json_schema_2020_12_tool not listed")
}

// argumentsFor builds arguments for a tool from its input schema: a
// placeholder for every required property.
func argumentsFor(schema any) map[string]any {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	b, _ := json.Marshal(schema)
	_ = json.Unmarshal(b, &s)
	args := map[string]any{}
	for _, name := range s.Required {
		args[name] = placeholder(s.Properties[name].Type)
	}
	return args
}

func placeholder(typ any) any {
	switch typ {
	case "integer":
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "object":
		return map[string]any{}
	case "array":
		return []any{}
	case "null":
		return nil
	}
	return "test"
}

// elicit accepts every elicitation: a URL-mode one with consent only, a
// form with a placeholder for each property of the requested schema
// that has no default (a boolean "confirmed" is true). The fields left
// out get the schema's defaults from the SDK (SEP-1034), as a user who
// keeps the proposed values would send them.
func elicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if r.Mode == mcp.ElicitModeURL {
		return &mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
	}
	var s struct {
		Properties map[string]struct {
			Type    any             `json:"type"`
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	b, _ := json.Marshal(r.RequestedSchema)
	_ = json.Unmarshal(b, &s)
	content := map[string]any{}
	for name, p := range s.Properties {
		if p.Default != nil {
			continue
		}
		switch v := placeholder(p.Type); v.(type) {
		case string, int, bool:
			content[name] = v
		case float64: // the wire schema allows integers only
			content[name] = 1
		}
	}
	return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}, nil
}

func sample(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		Role:       mcp.RoleAssistant,
		Content:    []mcp.Content{&mcp.TextContent{Text: "Paris"}},
		Model:      "everything-client",
		StopReason: "endTurn",
	}, nil
}

func roots(ctx context.Context, r *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///tmp/everything-client", Name: "workspace"}}}, nil
}
