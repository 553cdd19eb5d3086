package mcp

// The members of the sealed Result set (Result is in types.go): which
// set their own _meta (the server's identity goes there otherwise),
// which carry cache hints, and EmptyResult.

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
