package mcp

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Content is one block of tool, prompt or sampling content: *TextContent,
// *ImageContent, *AudioContent, *ResourceLink, *EmbeddedResource,
// *ToolUseContent or *ToolResultContent.
type Content interface {
	// ContentType returns the wire "type" of the block.
	ContentType() string
	isContent()
}

// Annotations tell the client how content is meant to be used.
type Annotations struct {
	Audience     []Role  `json:"audience,omitempty"`
	LastModified string  `json:"lastModified,omitempty"`
	Priority     float64 `json:"priority,omitempty"`
}

// Role is the speaker of a message.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// TextContent is plain text.
type TextContent struct {
	Text        string       `json:"text"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ImageContent is a base64-encoded image.
type ImageContent struct {
	Data        []byte       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// AudioContent is base64-encoded audio.
type AudioContent struct {
	Data        []byte       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// ResourceLink points at a resource the client may read.
type ResourceLink struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`
}

// EmbeddedResource carries a resource's contents inline.
type EmbeddedResource struct {
	Resource    *ResourceContents `json:"resource"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// ToolUseContent is a model's request to call a tool (sampling with tools).
type ToolUseContent struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	Meta  Meta            `json:"_meta,omitempty"`
}

// ToolResultContent is the result of a tool use, sent back to the model.
type ToolResultContent struct {
	ToolUseID         string    `json:"toolUseId"`
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
	Meta              Meta      `json:"_meta,omitempty"`
}

// ResourceContents is the content of one resource: Text for text
// resources, Blob (base64 on the wire) for binary ones.
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// MarshalJSON keeps "text" present for text contents (even empty) and
// omits it for blobs.
func (r *ResourceContents) MarshalJSON() ([]byte, error) {
	if r.Blob != nil {
		type blob struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType,omitempty"`
			Blob     []byte `json:"blob"`
			Meta     Meta   `json:"_meta,omitempty"`
		}
		return json.Marshal(blob{r.URI, r.MIMEType, r.Blob, r.Meta})
	}
	type text struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType,omitempty"`
		Text     string `json:"text"`
		Meta     Meta   `json:"_meta,omitempty"`
	}
	return json.Marshal(text{r.URI, r.MIMEType, r.Text, r.Meta})
}

func (*TextContent) ContentType() string       { return "text" }
func (*ImageContent) ContentType() string      { return "image" }
func (*AudioContent) ContentType() string      { return "audio" }
func (*ResourceLink) ContentType() string      { return "resource_link" }
func (*EmbeddedResource) ContentType() string  { return "resource" }
func (*ToolUseContent) ContentType() string    { return "tool_use" }
func (*ToolResultContent) ContentType() string { return "tool_result" }

func (*TextContent) isContent()       {}
func (*ImageContent) isContent()      {}
func (*AudioContent) isContent()      {}
func (*ResourceLink) isContent()      {}
func (*EmbeddedResource) isContent()  {}
func (*ToolUseContent) isContent()    {}
func (*ToolResultContent) isContent() {}

// The MarshalJSON methods add the "type" discriminator. TextContent, the
// common case, is written by hand.

func (c *TextContent) MarshalJSON() ([]byte, error) {
	if c.Annotations == nil && c.Meta == nil {
		b := make([]byte, 0, len(c.Text)+24)
		b = append(b, `{"type":"text","text":`...)
		b = jsonrpc.AppendString(b, c.Text)
		return append(b, '}'), nil
	}
	type alias TextContent
	return json.Marshal(struct {
		Type string `json:"type"`
		*alias
	}{"text", (*alias)(c)})
}

func (c *ImageContent) MarshalJSON() ([]byte, error) {
	type alias ImageContent
	return json.Marshal(struct {
		Type string `json:"type"`
		*alias
	}{"image", (*alias)(c)})
}

func (c *AudioContent) MarshalJSON() ([]byte, error) {
	type alias AudioContent
	return json.Marshal(struct {
		Type string `json:"type"`
		*alias
	}{"audio", (*alias)(c)})
}

func (c *ResourceLink) MarshalJSON() ([]byte, error) {
	type alias ResourceLink
	return json.Marshal(struct {
		Type string `json:"type"`
		*alias
	}{"resource_link", (*alias)(c)})
}

func (c *EmbeddedResource) MarshalJSON() ([]byte, error) {
	type alias EmbeddedResource
	return json.Marshal(struct {
		Type string `json:"type"`
		*alias
	}{"resource", (*alias)(c)})
}

func (c *ToolUseContent) MarshalJSON() ([]byte, error) {
	type alias ToolUseContent
	a := (*alias)(c)
	if a.Input == nil {
		cp := *a
		cp.Input = json.RawMessage(`{}`)
		a = &cp
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		*alias
	}{"tool_use", a})
}

func (c *ToolResultContent) MarshalJSON() ([]byte, error) {
	type alias ToolResultContent
	a := (*alias)(c)
	if a.Content == nil {
		cp := *a
		cp.Content = []Content{}
		a = &cp
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		*alias
	}{"tool_result", a})
}

// UnmarshalJSON decodes the nested content blocks.
func (c *ToolResultContent) UnmarshalJSON(b []byte) error {
	type alias ToolResultContent
	var w struct {
		*alias
		Content []json.RawMessage `json:"content"`
	}
	w.alias = (*alias)(c)
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var err error
	c.Content, err = decodeContentList(w.Content)
	return err
}

// decodeContent decodes one content block by its "type".
func decodeContent(raw []byte) (Content, error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	var c Content
	switch head.Type {
	case "text":
		c = new(TextContent)
	case "image":
		c = new(ImageContent)
	case "audio":
		c = new(AudioContent)
	case "resource_link":
		c = new(ResourceLink)
	case "resource":
		c = new(EmbeddedResource)
	case "tool_use":
		c = new(ToolUseContent)
	case "tool_result":
		c = new(ToolResultContent)
	case "":
		return nil, errors.New("content block without type")
	default:
		return nil, fmt.Errorf("unknown content type %q", head.Type)
	}
	if err := json.Unmarshal(raw, c); err != nil {
		return nil, fmt.Errorf("content of type %q: %w", head.Type, err)
	}
	return c, nil
}

func decodeContentList(raws []json.RawMessage) ([]Content, error) {
	if raws == nil {
		return nil, nil
	}
	out := make([]Content, 0, len(raws))
	for i, r := range raws {
		c, err := decodeContent(r)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// decodeContentOneOrMany decodes a sampling content field: one block or an
// array of blocks.
func decodeContentOneOrMany(raw json.RawMessage) ([]Content, bool, error) {
	switch jsonrpc.KindOf(raw) {
	case jsonrpc.KindArray:
		var raws []json.RawMessage
		if err := json.Unmarshal(raw, &raws); err != nil {
			return nil, true, err
		}
		cs, err := decodeContentList(raws)
		return cs, true, err
	case jsonrpc.KindObject:
		c, err := decodeContent(raw)
		if err != nil {
			return nil, false, err
		}
		return []Content{c}, false, nil
	}
	return nil, false, errors.New("content must be an object or an array")
}
