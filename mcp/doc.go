// Package mcp is a Go SDK for the Model Context Protocol, revision
// 2026-07-28, and the earlier revisions clients still speak: a Server
// that serves tools, prompts and resources, a Client, and the
// transports between them.
//
//	import "github.com/roundtrip-mcp/roundtrip/mcp"
//
// # A server
//
// Register typed tools (the input schema is inferred from In) and serve
// them over Streamable HTTP or stdio:
//
//	type Args struct{ Name string `json:"name"` }
//	type Region struct{ Region string `json:"region"` }
//
//	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
//	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, func(ctx context.Context, req *mcp.CallToolRequest, in Args) (*mcp.CallToolResult, error) {
//		region, err := mcp.Elicit[Region](ctx, "Which region?")
//		if err != nil {
//			return nil, err // not answered yet: the client is asked, the call comes back
//		}
//		r, err := region.Value() // declined or cancelled: an isError result
//		if err != nil {
//			return nil, err
//		}
//		return mcp.TextResult("Provisioned " + in.Name + " in " + r.Region), nil
//	})
//	http.Handle("/mcp", mcp.NewHTTPHandler(srv, nil)) // or srv.ServeStdio(ctx)
//
// Prompts can be typed the same way (AddTypedPrompt infers the arguments from
// a struct), prompt arguments and template variables can complete
// themselves (WithCompletion), NewLogHandler sends a handler's slog
// records to its client, ServerOptions.Visible decides per request which
// tools, prompts and resources exist, and methods outside the
// specification are served under an extension the server advertises
// (AddExtension, AddMethod, WrapTool, Detach; mcp/tasks is built that way).
//
// # A client
//
//	client := mcp.NewClient(mcp.NewHTTPClientTransport("http://127.0.0.1:8000/mcp", nil), &mcp.ClientOptions{
//		Elicitation: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
//			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"region": "eu-west-1"}}, nil
//		},
//	})
//	defer client.Close()
//	res, err := client.CallTool(ctx, "provision", map[string]any{"name": "orders"}, nil)
//
// The client answers the server's questions with its handlers and sends
// the call again until it completes (CallOptions.Manual hands the
// questions back instead, as a PendingCall that can be saved and resumed
// in another process). It calls a server's custom methods the same way
// (Client.CallMethod, CallMethodAs), once ClientOptions.Extensions declares
// their extension.
//
// # How it is built
//
// A request is decoded once, in the era it was sent in, and runs down one
// middleware chain; a modern request leaves nothing on the server, and with
// ServerOptions.SessionStore a 2025 session lives where every instance finds
// it. The request path and where each part lives: docs/design/architecture.md.
//
// # Asking for input
//
// A tool, prompt or resource-template handler asks with Elicit,
// ElicitForm, ElicitURL, Sample or ListRoots. On a 2026-07-28 request
// asking never blocks: the first time, the question is recorded and the
// call returns an error matching ErrInputRequired, which the handler
// returns; the SDK answers the request with an InputRequiredResult
// carrying every question recorded in that run. On the retry the handler
// runs again from the top and the same call now returns the answer.
//
// THE HANDLER BODY RUNS AGAIN ON EVERY ROUND. Derive questions from the
// arguments and from earlier answers only, and keep side effects after
// the last question (or make them idempotent): anything before a
// question runs once per round.
//
// Independent questions asked one after the other, with their errors
// joined (errors.Join), leave together in one round; a question asked
// only after an earlier answer is known takes the next round. Answers
// live in the sealed requestState, never in server memory, so any
// instance with the same keys serves any round; each is pinned to a
// digest of its question as sent (a reworded question is asked again).
// Keys are derived from the question (or set with WithKey). On a session
// of an earlier revision the same calls send live requests and block
// until the client answers; the handler runs once. A low-level handler
// (Server.AddTool) may build its own InputRequiredResult instead.
//
// # Errors
//
// A JSON-RPC error is an *Error (match it with errors.As, or errors.Is
// against a sentinel such as ErrInvalidRequestState); everything the
// client itself rejects is one of the sentinels and types in the
// documentation of Client.
package mcp
