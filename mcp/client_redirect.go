package mcp

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects one request follows when
// HTTPClientOptions.FollowRedirects is set (net/http's own bound).
const maxRedirects = 10

// maxLocationInError bounds the Location quoted in a redirect error.
const maxLocationInError = 200

// redirectClient returns the client the transport sends with: a copy of
// hc (never hc itself, which stays as the caller made it) whose
// CheckRedirect refuses every redirect, or, with follow, follows at most
// maxRedirects and sends nothing but the transport's own MCP headers to
// another origin than the one of the request's first hop (no
// Authorization, Cookie, session id or HTTPClientOptions.Header, which
// net/http would keep for another port of the same host, or for any host
// when they are custom headers). The caller's CheckRedirect, if any,
// still has the last word on a redirect that is followed.
func redirectClient(hc *http.Client, follow bool) *http.Client {
	c := *hc
	user := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !follow {
			return redirectRefused(via[len(via)-1], req)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: stopped after %d redirects", ErrRedirect, maxRedirects)
		}
		if origin(req.URL) != origin(via[0].URL) {
			for k := range req.Header {
				if !mcpOwnHeader(k) {
					delete(req.Header, k)
				}
			}
		}
		if user != nil {
			return user(req, via)
		}
		return nil
	}
	return &c
}

// redirectRefused is the error for a redirect of from to next.
func redirectRefused(from, next *http.Request) error {
	loc := next.URL.Redacted()
	if len(loc) > maxLocationInError {
		loc = loc[:maxLocationInError] + "..."
	}
	status := 0
	if next.Response != nil {
		status = next.Response.StatusCode
	}
	return fmt.Errorf("%w: %s %s answered HTTP %d to %s (set HTTPClientOptions.FollowRedirects to follow it)",
		ErrRedirect, from.Method, from.URL.Redacted(), status, loc)
}

// mcpOwnHeader reports whether the transport's request header k (in
// canonical form) is one of the MCP headers it sets itself that carry no
// credential, and may go to another origin.
func mcpOwnHeader(k string) bool {
	switch k {
	case "Content-Type", "Accept", "Last-Event-Id", "Mcp-Protocol-Version", HeaderMethod, HeaderName:
		return true
	}
	return strings.HasPrefix(k, headerParamPrefix)
}

// origin is the scheme, host and port of u (the default port made
// explicit), lower-cased: two URLs of the same origin get the same
// string.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// sameOrigin reports whether a and b have the same origin.
func sameOrigin(a, b *url.URL) bool { return a != nil && b != nil && origin(a) == origin(b) }
