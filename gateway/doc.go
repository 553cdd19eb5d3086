// Package gateway puts many MCP servers, of any revision and transport,
// behind one server that every client can use.
//
// # A pool of upstreams
//
// Pool is a client of many upstreams, usable alone by an agent host:
// each Upstream is a stdio command (run in its own process group, killed
// as a group when closed or restarted) or a URL (Streamable HTTP in any
// revision, the client negotiating, or HTTP+SSE of 2024-11-05). Each is
// supervised on its own: connected and listed, restarted or reconnected
// with exponential backoff when it fails, its circuit breaker opened
// after BreakerThreshold failures in a row; an expired 2025 session is
// reopened and the request sent again. Health reports each one; every
// call is bounded by the upstream's Timeout and MaxConcurrency.
//
// # The aggregate server
//
// Gateway serves a Pool as one *mcp.Server:
//
//	g, err := gateway.New(upstreams, &gateway.Options{Server: &mcp.ServerOptions{...}})
//	http.Handle("/mcp", auth.RequireBearer(mcp.NewHTTPHandler(g.Server(), nil), bearer))
//	http.Handle("/upstreams", g.HealthHandler())
//	defer g.Close()
//
// Tools and prompts are named prefix + DefaultSeparator + name; a name
// that would be longer than MaxNameLength, that is not made of
// [A-Za-z0-9_.-], or that two entries would share, is shortened with a
// hash of its upstream and original name (deterministic, the same on
// every instance). Resource URIs stay as they are unless two upstreams
// expose the same one; then both are rewritten
// (roundtrip-gateway://UPSTREAM/?uri=ORIGINAL). Every entry carries its
// upstream and original name in _meta under MetaKey. The gateway lists
// every page of every upstream and the aggregate server pages locally. An
// upstream's list_changed refreshes its part; an upstream that goes down
// has its entries withdrawn, and the rest serve on; either way listening
// clients get list_changed.
//
// # Eras translated through the same handler
//
// A tool call is one handler whatever the eras of the two sides:
//
//   - a 2025 upstream's live elicitation/create, sampling/createMessage
//     and roots/list during a call become input_required rounds for a
//     2026-07-28 client, one question a round, while the gateway holds
//     the upstream call open (Options.RoundTimeout per round,
//     Options.MaxHeld and MaxHeldPerPrincipal calls); the round's
//     requestState, sealed by the aggregate server and bound to the
//     downstream principal, names the held call;
//   - a 2026-07-28 upstream's input_required rounds are passed on with
//     the upstream's PendingCall (its own requestState inside) wrapped in
//     the gateway's sealed state, so a client cannot replay it as another
//     principal, on another tool or upstream; nothing is held in memory;
//   - a 2025 downstream session gets both as live questions: the
//     aggregate server's bridge asks them and calls the handler again
//     with the answers.
//
// # Policy
//
// Upstream.Allow and Upstream.Tools admit principals (the mcp.TokenInfo
// of auth.RequireBearer) by scope, subject or client id; what a
// principal may not use is left out of its lists and answered exactly as
// an unknown name. Upstream.Ask (an AskPolicy) says which questions an
// upstream may put to the user; a refused question, or one the
// downstream client cannot answer, is answered to the upstream as
// declined.
//
// See docs/design/gateway.md for what is guaranteed when an upstream
// dies mid-call, and for the limits.
package gateway
