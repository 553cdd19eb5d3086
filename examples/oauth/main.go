// Command oauth runs OAuth on both sides of MCP in one process: a small
// authorization server (the client credentials grant only, a stand-in
// for a real one), an MCP server that requires a bearer token from it,
// and a client whose auth.Transport discovers the authorization server
// from the MCP server's challenge, gets a token and retries.
//
//	go run ./examples/oauth
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/mcp"
)

func main() {
	log.SetFlags(0)
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	as := newAuthorizationServer("reports-bot", "s3cret")
	asServer := httptest.NewServer(as)
	defer asServer.Close()
	as.issuer = asServer.URL

	mcpServer := newProtectedServer(as, as.issuer)
	defer mcpServer.Close()

	return callAsBot(ctx, mcpServer.URL+"/mcp", asServer.URL, "s3cret", out)
}

// #region resource-server
// newProtectedServer serves an MCP server at /mcp behind RequireBearer,
// and its protected resource metadata, which names the authorization
// server.
func newProtectedServer(verifier auth.TokenVerifier, issuer string) *httptest.Server {
	srv := mcp.NewServer(mcp.Implementation{Name: "reports", Version: "1.0.0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "whoami"}, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		ti := mcp.TokenInfoFromContext(ctx) // the verified caller
		return mcp.TextResult("hello " + ti.ClientID), nil
	})
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	resource := ts.URL + "/mcp"
	prm, err := auth.ResourceMetadataURL(resource) // .../.well-known/oauth-protected-resource/mcp
	if err != nil {
		panic(err)
	}
	mux.Handle("/mcp", auth.RequireBearer(mcp.NewHTTPHandler(srv, nil), &auth.BearerOptions{
		Verifier:            verifier,
		ResourceMetadataURL: prm,
	}))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceHandler(&auth.ProtectedResourceMetadata{
		Resource:             resource,
		AuthorizationServers: []string{issuer},
	}))
	return ts
}

// #endregion resource-server

// #region client
// callAsBot calls the tool as a machine client: no user, no browser; the
// Transport obtains a token with the client credentials grant when the
// server first answers 401.
func callAsBot(ctx context.Context, url, issuer, secret string, out io.Writer) error {
	tr, err := auth.NewTransport(&auth.Options{Grant: &auth.Grant{
		Issuer: issuer,
		Client: auth.ClientCredentials{ClientID: "reports-bot", ClientSecret: secret},
	}})
	if err != nil {
		return err
	}
	client := mcp.NewClient(mcp.NewHTTPClientTransport(url, &mcp.HTTPClientOptions{
		HTTPClient: &http.Client{Transport: tr},
	}), nil)
	defer client.Close()
	res, err := client.CallTool(ctx, "whoami", nil, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res.Content[0].(*mcp.TextContent).Text)
	return nil
}

// #endregion client

// #region user-client
// userTransport is the Transport of a command-line tool acting for a
// user: the authorization code flow with PKCE in the user's browser, the
// browser coming back to a loopback listener, and tokens (and dynamic
// client registrations) kept in a file across runs.
func userTransport(configDir string) (*auth.Transport, error) {
	const redirect = "http://127.0.0.1:8765/callback"
	authorize, err := auth.LoopbackAuthorizer(auth.LoopbackOptions{RedirectURL: redirect})
	if err != nil {
		return nil, err
	}
	store, err := auth.NewFileTokenStore(filepath.Join(configDir, "tokens.json"))
	if err != nil {
		return nil, err
	}
	return auth.NewTransport(&auth.Options{
		RedirectURL: redirect,
		Authorize:   authorize,
		TokenStore:  store,
		ClientStore: store,
	})
}

// #endregion user-client

// authorizationServer is a minimal OAuth authorization server: metadata
// (RFC 8414) and a token endpoint for the client credentials grant of
// one client. It verifies its own opaque tokens, as introspection would.
type authorizationServer struct {
	issuer           string
	clientID, secret string
	mu               sync.Mutex
	tokens           map[string]string // token -> client id
}

func newAuthorizationServer(clientID, secret string) *authorizationServer {
	return &authorizationServer{clientID: clientID, secret: secret, tokens: map[string]string{}}
}

func (a *authorizationServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/.well-known/oauth-authorization-server":
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                a.issuer,
			"token_endpoint":        a.issuer + "/token",
			"grant_types_supported": []string{"client_credentials"},
		})
	case r.Method == http.MethodPost && r.URL.Path == "/token":
		id, secret, ok := r.BasicAuth()
		if !ok || id != a.clientID || secret != a.secret || r.PostFormValue("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		token := rand.Text()
		a.mu.Lock()
		a.tokens[token] = id
		a.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": 3600})
	default:
		http.NotFound(w, r)
	}
}

// Verify makes the authorization server the MCP server's TokenVerifier.
func (a *authorizationServer) Verify(ctx context.Context, token string) (*mcp.TokenInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := a.tokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &mcp.TokenInfo{ClientID: id, Issuer: a.issuer, Subject: id}, nil
}
