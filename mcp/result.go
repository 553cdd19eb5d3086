package mcp

// Result is what a MethodHandler (and so every middleware) returns: one
// of this package's result types. The set is closed, so that the SDK can
// encode every result in the era its request was served in (resultType,
// the server's identity and cache hints on 2026-07-28; none of those on
// an earlier revision) without a type switch at each step:
//
//   - *CallToolResult, *GetPromptResult, *ReadResourceResult: the complete
//     result of a call;
//   - *InputRequiredResult: the call needs input (tools/call, prompts/get
//     and resources/read, and carrier custom methods, only);
//   - *ExtensionResult: the value of a custom method (AddMethod), or a
//     tools/call answered with an extension's result type (WrapTool);
//   - *ListToolsResult, *ListPromptsResult, *ListResourcesResult,
//     *ListResourceTemplatesResult, *CompleteResult, *DiscoverResult;
//   - EmptyResult, for methods whose result has no members.
//
// A middleware passes a Result on, or returns one of its own of these
// types; it cannot invent others.
type Result interface {
	// ownMeta reports whether the result sets its own _meta; the server's
	// identity goes into _meta otherwise.
	ownMeta() bool
}

// cacheable is implemented by results with cache hints (ttlMs,
// cacheScope), through the embedded Cache: revisions without hints drop
// them.
type cacheable interface{ cacheHints() *Cache }

func (c *Cache) cacheHints() *Cache { return c }

// EmptyResult is the result of a method that returns nothing but
// success (ping, logging/setLevel, resources/subscribe, tasks/update).
type EmptyResult struct{}

func (*CallToolResult) ownMeta() bool                { return false }
func (r *GetPromptResult) ownMeta() bool             { return r.Meta != nil }
func (r *ReadResourceResult) ownMeta() bool          { return r.Meta != nil }
func (r *ListToolsResult) ownMeta() bool             { return r.Meta != nil }
func (r *ListPromptsResult) ownMeta() bool           { return r.Meta != nil }
func (r *ListResourcesResult) ownMeta() bool         { return r.Meta != nil }
func (r *ListResourceTemplatesResult) ownMeta() bool { return r.Meta != nil }
func (r *CompleteResult) ownMeta() bool              { return r.Meta != nil }
func (r *DiscoverResult) ownMeta() bool              { return r.Meta != nil }
func (*InputRequiredResult) ownMeta() bool           { return true }
func (EmptyResult) ownMeta() bool                    { return false }
func (*listenResult) ownMeta() bool                  { return true }
func (replayedResult) ownMeta() bool                 { return true }
func (*initializeResult) ownMeta() bool              { return true }
