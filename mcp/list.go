package mcp

import (
	"encoding/base64"
	"sort"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Lists are returned in a deterministic order (tools, prompts and
// templates by name, resources by URI) and cut into pages of
// ServerOptions.PageSize. A cursor names the last item of the previous
// page, so a page boundary stays put when items are added or removed
// elsewhere in the list.

const cursorPrefix = "c1:"

func encodeCursor(last string) *string {
	c := base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + last))
	return &c
}

func decodeCursor(c *string) (after string, ok bool) {
	if c == nil {
		return "", true
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(*c)
	if err != nil || len(b) < len(cursorPrefix) || string(b[:len(cursorPrefix)]) != cursorPrefix {
		return "", false
	}
	return string(b[len(cursorPrefix):]), true
}

var errBadCursor = jsonrpc.NewError(CodeInvalidParams, "Invalid params: invalid cursor")

// page cuts one page from the sorted items.
func page[T any](items []T, key func(T) string, cursor *string, size int) ([]T, *string, *Error) {
	after, ok := decodeCursor(cursor)
	if !ok {
		return nil, nil, errBadCursor
	}
	start := 0
	if cursor != nil {
		start = sort.Search(len(items), func(i int) bool { return key(items[i]) > after })
	}
	end := min(start+size, len(items))
	out := items[start:end]
	var next *string
	if end < len(items) && end > start {
		next = encodeCursor(key(items[end-1]))
	}
	return out, next, nil
}

func (s *Server) list(method string, p *ListRequest) (Result, error) {
	cache := Cache{TTLMs: s.opts.ListTTL.Milliseconds(), CacheScope: s.opts.CacheScope}
	size := s.opts.PageSize
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch method {
	case MethodToolsList:
		items, next, err := page(s.toolList, func(t *Tool) string { return t.Name }, p.Cursor, size)
		if err != nil {
			return nil, err
		}
		return &ListToolsResult{Tools: items, NextCursor: next, Cache: cache}, nil
	case MethodPromptsList:
		items, next, err := page(s.promptList, func(t *Prompt) string { return t.Name }, p.Cursor, size)
		if err != nil {
			return nil, err
		}
		return &ListPromptsResult{Prompts: items, NextCursor: next, Cache: cache}, nil
	case MethodResourcesList:
		items, next, err := page(s.resourceList, func(t *Resource) string { return t.URI }, p.Cursor, size)
		if err != nil {
			return nil, err
		}
		return &ListResourcesResult{Resources: items, NextCursor: next, Cache: cache}, nil
	case MethodResourceTemplatesList:
		// Templates keep registration order (matching order); the cursor
		// is the index of the next item.
		after, ok := decodeCursor(p.Cursor)
		if !ok {
			return nil, errBadCursor
		}
		start := 0
		if p.Cursor != nil {
			for i, t := range s.templateList {
				if t.URITemplate == after {
					start = i + 1
				}
			}
		}
		end := min(start+size, len(s.templateList))
		var next *string
		if end < len(s.templateList) && end > start {
			next = encodeCursor(s.templateList[end-1].URITemplate)
		}
		return &ListResourceTemplatesResult{ResourceTemplates: s.templateList[start:end], NextCursor: next, Cache: cache}, nil
	}
	return nil, methodNotFound(method)
}
