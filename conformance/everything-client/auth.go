package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/roundtrip-mcp/roundtrip/auth"
)

// The conformance suite's Client ID Metadata Document URL: the basic-cimd
// mock authorization server expects exactly this client_id.
const clientMetadataURL = "https://conformance-test.local/client-metadata.json"

// redirectURL is where the mock authorization servers send the
// authorization response; nothing listens there, the headless authorizer
// reads the redirect instead of following it.
const redirectURL = "http://localhost:3000/callback"

// authClient returns the HTTP client of the auth/* scenarios: an
// auth.Transport with the headless authorizer, the suite's CIMD URL and,
// when MCP_CONFORMANCE_CONTEXT carries client_id (and issuer), those
// pre-registered credentials.
func authClient(logger *slog.Logger) (*http.Client, error) {
	var sc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		Issuer       string `json:"issuer"`
	}
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &sc); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	opts := &auth.Options{
		Authorize:         headlessAuthorize(&http.Client{Timeout: 10 * time.Second}),
		RedirectURL:       redirectURL,
		ClientName:        "roundtrip-everything-client",
		ClientMetadataURL: clientMetadataURL,
		Logger:            logger,
	}
	if sc.ClientID != "" && sc.Issuer != "" {
		opts.PreRegistered = map[string]auth.ClientCredentials{
			sc.Issuer: {ClientID: sc.ClientID, ClientSecret: sc.ClientSecret},
		}
	}
	tr, err := auth.NewTransport(opts)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: tr}, nil
}

// headlessAuthorize is an auth.AuthorizeFunc for authorization servers
// that redirect at once (no login page): it GETs the authorization URL
// without following the redirect and returns its Location.
func headlessAuthorize(hc *http.Client) auth.AuthorizeFunc {
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return func(ctx context.Context, authorizationURL string) (*url.URL, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, authorizationURL, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode/100 != 3 {
			return nil, fmt.Errorf("authorization endpoint answered HTTP %d, not a redirect", resp.StatusCode)
		}
		loc, err := resp.Location()
		if err != nil {
			return nil, errors.Join(errors.New("authorization endpoint redirect"), err)
		}
		return loc, nil
	}
}
