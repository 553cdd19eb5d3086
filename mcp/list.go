package mcp

import (
	"context"
	"encoding/base64"
	"slices"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Lists are returned in a deterministic order (tools and prompts by name,
// resources by URI, templates in registration order, which is their
// matching order) and cut into pages of ServerOptions.PageSize. A cursor
// names the key of the last item of the previous page, so a page boundary
// stays put when items are added or removed elsewhere in the list.

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

// page cuts one page from a registry's listing. In a sorted list the
// page starts at the first key after the cursor's, listed or not any
// more. In an ordered one (templates) it starts after the cursor's item,
// or at the start when that item is gone.
//
// With keep (ServerOptions.Visible) the page holds the next size items
// keep accepts, and the cursor names the last of them: a hidden item
// takes no room, and the page boundary is a key as without a filter.
func page[E entry[V], V any](r *registry[E, V], cursor *string, size int, keep func(key string) bool) ([]V, *string, *Error) {
	after, ok := decodeCursor(cursor)
	if !ok {
		return nil, nil, errBadCursor
	}
	l := r.list()
	start := 0
	if cursor != nil {
		if r.ordered {
			start = slices.Index(l.keys, after) + 1
		} else {
			i, found := slices.BinarySearch(l.keys, after)
			if found {
				i++
			}
			start = i
		}
	}
	if keep != nil {
		return pageKept(l, start, size, keep)
	}
	end := min(start+size, len(l.views))
	var next *string
	if end < len(l.views) && end > start {
		next = encodeCursor(l.keys[end-1])
	}
	return l.views[start:end:end], next, nil
}

// pageKept is page through a filter: the items from start that keep
// accepts, size of them at most, and a cursor when another accepted item
// follows (so that the last page never comes back empty).
func pageKept[E, V any](l *listing[E, V], start, size int, keep func(key string) bool) ([]V, *string, *Error) {
	items := make([]V, 0, min(size, len(l.views)-start))
	last := -1
	i := start
	for ; i < len(l.views) && len(items) < size; i++ {
		if keep(l.keys[i]) {
			items = append(items, l.views[i])
			last = i
		}
	}
	var next *string
	for ; i < len(l.views) && last >= 0; i++ {
		if keep(l.keys[i]) {
			next = encodeCursor(l.keys[last])
			break
		}
	}
	return items, next, nil
}

// list serves the four list methods. With ServerOptions.Visible the
// items are the ones visible to the request and the result is private
// whatever ServerOptions.CacheScope says: another principal's list
// differs.
func (s *Server) list(ctx context.Context, method string, p *ListRequest) (Result, error) {
	cache := Cache{TTLMs: s.opts.ListTTL.Milliseconds(), CacheScope: s.defaultScope()}
	size := s.opts.PageSize
	switch method {
	case MethodToolsList:
		items, next, err := page(s.tools, p.Cursor, size, s.keep(ctx, FeatureTool))
		if err != nil {
			return nil, err
		}
		return &ListToolsResult{Tools: items, NextCursor: next, Cache: cache}, nil
	case methodPromptsList:
		items, next, err := page(s.prompts, p.Cursor, size, s.keep(ctx, FeaturePrompt))
		if err != nil {
			return nil, err
		}
		return &ListPromptsResult{Prompts: items, NextCursor: next, Cache: cache}, nil
	case MethodResourcesList:
		items, next, err := page(s.resources, p.Cursor, size, s.keep(ctx, FeatureResource))
		if err != nil {
			return nil, err
		}
		return &ListResourcesResult{Resources: items, NextCursor: next, Cache: cache}, nil
	case methodResourceTemplatesList:
		items, next, err := page(s.templates, p.Cursor, size, s.keep(ctx, FeatureResourceTemplate))
		if err != nil {
			return nil, err
		}
		return &ListResourceTemplatesResult{ResourceTemplates: items, NextCursor: next, Cache: cache}, nil
	}
	return nil, methodNotFound(method)
}
