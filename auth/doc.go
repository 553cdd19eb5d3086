// Package auth is an OAuth 2.1 client for MCP servers that require
// authorization (the MCP authorization spec, revisions 2025-11-25 and
// 2026-07-28, and the 2025-03-26 discovery for servers without protected
// resource metadata).
//
// Its entry point is [Transport], an [net/http.RoundTripper] that wraps a
// base transport: it adds "Authorization: Bearer" (or "DPoP") to every
// request and, when the server answers 401 (or 403 with
// error="insufficient_scope"), runs the authorization flow and retries
// the request once:
//
//   - protected resource metadata (RFC 9728), from the challenge's
//     resource_metadata or the well-known URLs (path-aware, then root),
//     whose resource must cover the server URL; when the server
//     publishes none (every URL answers 4xx), the 2025-03-26 discovery:
//     authorization server metadata at the server's origin, else the
//     default /authorize, /token and /register there, never another host;
//   - authorization server metadata (RFC 8414, then OpenID Connect
//     discovery, with the path-insertion variants), whose issuer must be
//     exactly the authorization server named by the resource;
//   - a client identity: pre-registered credentials for that issuer, a
//     Client ID Metadata Document URL when the server supports them, or
//     dynamic client registration (RFC 7591);
//   - the authorization code grant with PKCE S256, the resource indicator
//     (RFC 8707) and the RFC 9207 iss check of the authorization response;
//   - the token request with client_secret_basic, client_secret_post,
//     private_key_jwt (RFC 7523) or none, and refresh tokens
//     (offline_access is asked for when the authorization server lists
//     it).
//
// For machine-to-machine use, [Options].Grant replaces the
// authorization code flow with the client credentials grant or the JWT
// bearer grant (RFC 7523, for workload identity federation): no user,
// no redirect, the same discovery and checks, the credentials bound to
// one authorization server. [IDJAGAssertion] is the assertion of
// enterprise-managed authorization: the user's ID token exchanged at
// the enterprise identity provider for an ID-JAG (RFC 8693).
//
// None of the package's own requests (metadata, registration, token
// requests, the ID-JAG exchange, the JWKS fetch) follows a redirect, not
// even with a caller's http.Client: they carry credentials or decide
// where credentials go, so a 3xx answer is an [ErrRedirect] error (RFC
// 9700 section 4.12).
//
// [Options].DPoP makes the tokens sender-constrained (DPoP, RFC 9449):
// a fresh proof on every token and resource request, the DPoP
// authorization scheme, tokens bound to the Transport's key, and the
// servers' use_dpop_nonce challenges answered.
//
//	tr, err := auth.NewTransport(&auth.Options{Grant: &auth.Grant{
//		Issuer: "https://as.example",
//		Client: auth.ClientCredentials{ClientID: "svc", ClientSecret: secret},
//	}})
//
// The step that involves the user (opening the authorization URL in a
// browser and catching the redirect) is the [AuthorizeFunc] the
// application supplies; [LoopbackAuthorizer] is one for native apps and
// command-line tools (RFC 8252 loopback redirect). Tokens live in a
// [TokenStore]; the default keeps them in memory, [FileTokenStore] keeps
// them (and, as a [ClientStore], dynamic registrations) in a file across
// runs.
//
// Use it with the MCP client:
//
//	const redirect = "http://127.0.0.1:8765/callback"
//	authorize, err := auth.LoopbackAuthorizer(auth.LoopbackOptions{RedirectURL: redirect})
//	store, err := auth.NewFileTokenStore(filepath.Join(configDir, "tokens.json"))
//	tr, err := auth.NewTransport(&auth.Options{
//		RedirectURL: redirect,
//		Authorize:   authorize,
//		TokenStore:  store,
//		ClientStore: store,
//	})
//	c := mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{
//		HTTPClient: &http.Client{Transport: tr},
//	}), nil)
//
// The resource-server half protects an MCP server: [RequireBearer] puts
// bearer-token authentication (RFC 6750) in front of the HTTP handler,
// answering 401 or 403 with a challenge that names the resource's
// metadata, served by [ProtectedResourceHandler] at
// [ResourceMetadataURL]. Tokens are checked by a [TokenVerifier]:
// [JWTVerifier] for JWT access tokens against the issuer's key set, or a
// [TokenVerifierFunc] (introspection, opaque tokens). The verified token
// reaches handlers as an *mcp.TokenInfo, and the request-state boundary
// binds every sealed requestState to its client, issuer and subject.
// [BearerOptions].DPoP verifies the proofs of DPoP-bound tokens (RFC
// 9449; [DPoPVerifyOptions], a [ReplayCache] that a fleet can share),
// and [BearerOptions].ToolScopes (PromptScopes, ResourceScopes) makes a
// target need scopes of its own: a token without them gets 403
// insufficient_scope, to which a Transport answers by stepping up.
//
//	v, err := auth.NewJWTVerifier(auth.JWTOptions{Issuer: iss, Audience: "https://mcp.example/mcp", JWKSURL: iss + "/jwks"})
//	prm, _ := auth.ResourceMetadataURL("https://mcp.example/mcp")
//	mux.Handle("/mcp", auth.RequireBearer(mcp.NewHTTPHandler(srv, nil), &auth.BearerOptions{Verifier: v, ResourceMetadataURL: prm}))
//	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceHandler(&auth.ProtectedResourceMetadata{
//		Resource: "https://mcp.example/mcp", AuthorizationServers: []string{iss}}))
package auth
