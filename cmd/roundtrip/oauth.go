package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/roundtrip-mcp/roundtrip/auth"
)

// defaultRedirectURL is where the browser comes back after an
// authorization (a loopback listener, RFC 8252).
const defaultRedirectURL = "http://127.0.0.1:8765/callback"

// clientSecretEnv holds the pre-registered client secret when
// --oauth-client-secret is not given (a secret on the command line is
// visible to other users of the machine).
const clientSecretEnv = "ROUNDTRIP_OAUTH_CLIENT_SECRET"

// oauthFlags are the flags of OAuth for HTTP servers.
type oauthFlags struct {
	enabled      bool
	redirect     string
	issuer       string
	clientID     string
	clientSecret string
	tokenFile    string
	browser      bool
}

func (f *oauthFlags) register(fs interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
}) {
	fs.BoolVar(&f.enabled, "oauth", f.enabled, "authorize with OAuth when the HTTP server asks for it (the login happens in a browser; tokens are kept in --oauth-token-file)")
	fs.StringVar(&f.redirect, "oauth-redirect", f.redirect, "the loopback redirect `URL` the browser comes back to")
	fs.StringVar(&f.issuer, "oauth-issuer", f.issuer, "the authorization server `ISSUER` that --oauth-client-id is registered at")
	fs.StringVar(&f.clientID, "oauth-client-id", f.clientID, "a pre-registered client `ID` (instead of dynamic registration); needs --oauth-issuer")
	fs.StringVar(&f.clientSecret, "oauth-client-secret", f.clientSecret, "the pre-registered client's `SECRET` (default: $"+clientSecretEnv+")")
	fs.StringVar(&f.tokenFile, "oauth-token-file", f.tokenFile, "keep OAuth tokens and registrations in `FILE` (default: roundtrip/oauth-tokens.json in the user config directory)")
	fs.BoolVar(&f.browser, "oauth-browser", f.browser, "also try to open the authorization URL in the system browser")
}

// check validates the flags (usage errors).
func (f *oauthFlags) check(headers http.Header) error {
	if !f.enabled {
		switch {
		case f.clientID != "" || f.issuer != "" || f.clientSecret != "" || f.browser || f.redirect != defaultRedirectURL:
			return usagef("the --oauth-... flags need --oauth")
		}
		return nil
	}
	if headers.Get("Authorization") != "" {
		return usagef("give -H 'Authorization: ...' or --oauth, not both")
	}
	if f.clientSecret != "" && f.clientID == "" {
		return usagef("--oauth-client-secret needs --oauth-client-id")
	}
	if (f.clientID == "") != (f.issuer == "") {
		return usagef("--oauth-client-id and --oauth-issuer go together: a pre-registered client is used only with the server it is registered at")
	}
	if f.issuer != "" {
		if u, err := url.Parse(f.issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return usagef("--oauth-issuer %q is not an http(s) URL", f.issuer)
		}
	}
	return nil
}

// tokenFilePath is --oauth-token-file or the default under the user's
// configuration directory.
func (f *oauthFlags) tokenFilePath() (string, error) {
	if f.tokenFile != "" {
		return f.tokenFile, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no place for the OAuth tokens (give --oauth-token-file): %w", err)
	}
	return filepath.Join(dir, "roundtrip", "oauth-tokens.json"), nil
}

// oauthClient returns the HTTP client that authorizes the session's
// requests, after logging in when no usable token is stored.
func (s *session) oauthClient() (*http.Client, error) {
	f := &s.opts.oauth
	path, err := f.tokenFilePath()
	if err != nil {
		return nil, err
	}
	store, err := auth.NewFileTokenStore(path)
	if err != nil {
		return nil, err
	}
	// The default Open prints the URL on stderr (and, with
	// --oauth-browser, starts the platform's opener).
	loopback, err := auth.LoopbackAuthorizer(auth.LoopbackOptions{RedirectURL: f.redirect, Output: s.errw, Browser: f.browser})
	if err != nil {
		return nil, usagef("--oauth-redirect: %v", err)
	}
	o := &auth.Options{
		// The user's time in the browser does not count against
		// --timeout: the round's watchdog is paused meanwhile.
		Authorize: func(ctx context.Context, authorizationURL string) (*url.URL, error) {
			defer s.ui.hold()()
			fmt.Fprintf(s.errw, "roundtrip: %s requires authorization (Ctrl-C gives up).\n", s.target.URL)
			u, err := loopback(ctx, authorizationURL)
			if err == nil {
				fmt.Fprintln(s.errw, "roundtrip: authorized.")
			}
			return u, err
		},
		RedirectURL: f.redirect,
		ClientName:  "roundtrip CLI",
		TokenStore:  store,
		ClientStore: store,
		Logger:      slog.New(slog.NewTextHandler(s.errw, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if f.clientID != "" {
		secret := f.clientSecret
		if secret == "" {
			secret = os.Getenv(clientSecretEnv)
		}
		o.PreRegistered = map[string]auth.ClientCredentials{f.issuer: {ClientID: f.clientID, ClientSecret: secret}}
	}
	tr, err := auth.NewTransport(o)
	if err != nil {
		return nil, err
	}
	if err := s.oauthLogin(tr); err != nil {
		return nil, err
	}
	return &http.Client{Transport: tr}, nil
}

// oauthLogin authorizes before the command starts when no usable token
// is stored, so that the time spent in the browser is not bounded by
// --timeout (which bounds each MCP request): it sends a GET to the
// server through the Transport, which on 401 runs the flow and stores
// the token. The response itself is not used.
func (s *session) oauthLogin(tr *auth.Transport) error {
	tok, err := tr.Token(s.ctx, s.target.URL)
	if err != nil {
		return err
	}
	if tok != nil && (tok.Expiry.IsZero() || time.Until(tok.Expiry) > time.Minute) {
		return nil
	}
	ctx := s.ctx
	if s.opts.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.timeout+auth.DefaultLoopbackTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.target.URL, nil)
	if err != nil {
		return err
	}
	for k, v := range s.opts.headers.h {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("authorizing at %s: %w", s.target.URL, err)
	}
	resp.Body.Close()
	return nil
}

// ---- logout ----

const logoutHelp = `Forgets the OAuth token stored for the server given with --url (in
--oauth-token-file), so that the next --oauth run logs in again. With --all the
whole file goes: every token and client registration.`

func cmdLogout(s *session) error {
	path, err := s.opts.oauth.tokenFilePath()
	if err != nil {
		return err
	}
	if s.opts.logoutAll {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return s.say(map[string]any{"removed": path}, "removed %s", path)
	}
	if s.opts.url == "" {
		return usagef("logout needs --url URL (or --all)")
	}
	t, err := s.opts.target()
	if err != nil {
		return err
	}
	key, err := auth.TokenKey(t.URL)
	if err != nil {
		return usagef("%v", err)
	}
	store, err := auth.NewFileTokenStore(path)
	if err != nil {
		return err
	}
	tok, err := store.Load(s.ctx, key)
	if err != nil {
		return err
	}
	if tok == nil {
		return s.say(map[string]any{"url": t.URL, "forgot": false}, "no token stored for %s", t.URL)
	}
	if err := store.Delete(s.ctx, key); err != nil {
		return err
	}
	return s.say(map[string]any{"url": t.URL, "forgot": true}, "forgot the token for %s", t.URL)
}

// say prints a one-line outcome on stdout: v as JSON with --json, the
// formatted text otherwise.
func (s *session) say(v any, format string, args ...any) error {
	if s.opts.json {
		return printJSON(s.out, v)
	}
	_, err := fmt.Fprintf(s.out, format+"\n", args...)
	return err
}
