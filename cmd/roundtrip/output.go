package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	_, err = w.Write(append(jsonText(b), '\n'))
	return err
}

// compactValue renders a log message's data: a string as is, anything
// else as compact JSON.
func compactValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// printResult prints a complete result. A tool result with isError set is
// printed and then reported as errToolError.
func (s *session) printResult(res any) error {
	if s.opts.json {
		if err := printJSON(s.out, s.asSent(res)); err != nil {
			return err
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			return errToolError
		}
		return nil
	}
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if len(r.Content) == 0 && r.StructuredContent == nil {
			fmt.Fprintln(s.errw, "(no content)")
		}
		text := false
		for _, c := range r.Content {
			if _, ok := c.(*mcp.TextContent); ok {
				text = true
			}
			fmt.Fprintln(s.out, contentText(c))
		}
		if r.StructuredContent != nil && !text {
			b, err := json.MarshalIndent(r.StructuredContent, "", "  ")
			if err == nil {
				fmt.Fprintln(s.out, string(b))
			}
		}
		if r.IsError {
			return errToolError
		}
	case *mcp.GetPromptResult:
		if r.Description != "" {
			fmt.Fprintf(s.errw, "(%s)\n", r.Description)
		}
		if len(r.Messages) == 0 {
			fmt.Fprintln(s.errw, "(no content)")
		}
		for _, m := range r.Messages {
			fmt.Fprintf(s.out, "[%s] %s\n", m.Role, contentText(m.Content))
		}
	case *mcp.ReadResourceResult:
		if len(r.Contents) == 0 {
			fmt.Fprintln(s.errw, "(no content)")
		}
		for _, c := range r.Contents {
			if len(r.Contents) > 1 {
				fmt.Fprintf(s.errw, "── %s\n", c.URI)
			}
			fmt.Fprintln(s.out, resourceText(c))
		}
	default:
		return printJSON(s.out, res)
	}
	return nil
}

// asSent is res as the session's revision has it: a resources/read
// result of an earlier revision carries no cache hints (ttlMs and
// cacheScope are 2026-07-28's), so none are printed.
func (s *session) asSent(res any) any {
	r, ok := res.(*mcp.ReadResourceResult)
	if !ok || r == nil || s.client == nil {
		return res
	}
	if v := s.client.ProtocolVersion(); v == "" || v >= mcp.LatestProtocolVersion {
		return res // a 2026-07-28 result: its hints are the server's
	}
	return &struct {
		Contents []*mcp.ResourceContents `json:"contents"`
		Meta     mcp.Meta                `json:"_meta,omitempty"`
	}{r.Contents, r.Meta}
}

// contentText renders a content block: text as is, anything else as a
// one-line summary.
func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data))
	case *mcp.ResourceLink:
		s := "[resource link " + c.URI
		if c.Name != "" {
			s += " " + c.Name
		}
		if c.MIMEType != "" {
			s += " " + c.MIMEType
		}
		return s + "]"
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return "[embedded resource]"
		}
		return resourceText(c.Resource)
	case *mcp.ToolUseContent:
		return fmt.Sprintf("[tool use %s %s]", c.Name, c.Input)
	case *mcp.ToolResultContent:
		var parts []string
		for _, inner := range c.Content {
			parts = append(parts, contentText(inner))
		}
		return fmt.Sprintf("[tool result %s] %s", c.ToolUseID, strings.Join(parts, " "))
	case nil:
		return "[no content]"
	}
	return fmt.Sprintf("[%s content]", c.ContentType())
}

// resourceText renders resource contents: text as is, a blob summarised.
func resourceText(r *mcp.ResourceContents) string {
	if r.Blob != nil {
		mime := r.MIMEType
		if mime == "" {
			mime = "binary"
		}
		return fmt.Sprintf("[%s %s, %d bytes; --json shows it in base64]", r.URI, mime, len(r.Blob))
	}
	return r.Text
}

// printTool prints a tool and a summary of its arguments.
func printTool(w io.Writer, t *mcp.Tool) {
	fmt.Fprintf(w, "%s%s\n", t.Name, titled(t.Title))
	if t.Description != "" {
		fmt.Fprintf(w, "    %s\n", indentRest(t.Description, "    "))
	}
	schema, err := parseObjectSchema(t.InputSchema)
	if err != nil || len(schema.Properties) == 0 {
		return
	}
	names := make([]string, 0, len(schema.Properties))
	for n := range schema.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := schema.Properties[n]
		typ := strings.Join(p.types(), "|")
		if typ == "" {
			typ = "any"
		}
		for _, r := range schema.Required {
			if r == n {
				typ += ", required"
			}
		}
		if len(p.Enum) > 0 {
			var vs []string
			for _, e := range p.Enum {
				vs = append(vs, string(e))
			}
			typ += ", one of " + strings.Join(vs, " ")
		}
		desc := ""
		if p.Description != "" {
			desc = ": " + p.Description
		}
		fmt.Fprintf(w, "    %s (%s)%s\n", n, typ, desc)
	}
}
