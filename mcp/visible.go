package mcp

import (
	"context"
	"strconv"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Per-request feature sets (ServerOptions.Visible): which tools, prompts,
// resources and templates exist is decided per request. Every place that
// names a feature asks: the lists (list.go), the calls (dispatch.go:
// tools/call, prompts/get, resources/read, completion/complete) and the
// listen streams (listen.go). A hidden feature is answered exactly as an
// absent one. See docs/design/extensions.md.

// FeatureKind is what a name given to ServerOptions.Visible names.
type FeatureKind uint8

// Feature kinds.
const (
	FeatureTool             FeatureKind = iota + 1 // a tool, by name
	FeaturePrompt                                  // a prompt, by name
	FeatureResource                                // a static resource, by URI (also the URI of a resource update)
	FeatureResourceTemplate                        // a resource template, by URI template
)

// String returns "tool", "prompt", "resource" or "resourceTemplate".
func (k FeatureKind) String() string {
	switch k {
	case FeatureTool:
		return "tool"
	case FeaturePrompt:
		return "prompt"
	case FeatureResource:
		return "resource"
	case FeatureResourceTemplate:
		return "resourceTemplate"
	}
	return "FeatureKind(" + strconv.Itoa(int(k)) + ")"
}

// visible reports whether the feature exists for the request ctx
// belongs to. A panic in the hook hides the feature (and is logged).
func (s *Server) visible(ctx context.Context, kind FeatureKind, name string) (ok bool) {
	f := s.opts.Visible
	if f == nil {
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("mcp: ServerOptions.Visible panicked", "kind", kind.String(), "name", name, "panic", p)
			ok = false
		}
	}()
	return f(ctx, kind, name)
}

// keep is the list filter of one kind for the request, nil without
// ServerOptions.Visible.
func (s *Server) keep(ctx context.Context, kind FeatureKind) func(string) bool {
	if s.opts.Visible == nil {
		return nil
	}
	return func(name string) bool { return s.visible(ctx, kind, name) }
}

// defaultScope is the cacheScope of a list, and of a resources/read
// result that sets none: private whenever what a request sees depends on
// the request.
func (s *Server) defaultScope() CacheScope {
	if s.opts.Visible != nil {
		return CachePrivate
	}
	return s.opts.CacheScope
}

// visibleChange reports whether a listen stream opened with ctx may be
// told of c: when one of the features it names is visible there.
func (s *Server) visibleChange(ctx context.Context, c change) bool {
	for _, n := range c.names {
		if s.visible(ctx, c.feature, n) {
			return true
		}
	}
	return false
}

// checkToolHeaders checks the Mcp-Param-* headers of a tools/call on a
// server with ServerOptions.Visible, once the tool is known to be
// visible. The transport leaves them unchecked there (headers.go), since
// a mismatch answered before the visibility is settled would tell a
// hidden tool from an unknown one. The era checks every binding again,
// as the transport would have; a request without HTTP headers (a byte
// stream, a batch) has none to check.
func (s *Server) checkToolHeaders(ctx context.Context, p *CallToolRequest) *Error {
	sc := scopeFrom(ctx)
	info, ok := RequestInfoFrom(ctx)
	if sc == nil || !ok || info.HTTP == nil {
		return nil
	}
	c := &call{msg: jsonrpc.Message{Method: sc.method}, params: p, toolVisible: true}
	return sc.era.checkHeaders(s, c, info.HTTP.Header)
}
