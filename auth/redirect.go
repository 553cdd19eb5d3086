package auth

import (
	"fmt"
	"net/http"
)

// maxLocationInError bounds the Location quoted in a redirect error.
const maxLocationInError = 200

// noRedirects returns a copy of hc that follows no redirect: a 3xx
// response comes back as it is (http.ErrUseLastResponse) and the caller
// turns it into an error with redirectError. hc itself is not modified.
//
// The package's requests to authorization servers and protected
// resources carry client credentials, authorization codes, PKCE
// verifiers, refresh tokens and assertions, or fetch the metadata and
// keys that decide where those go; a redirect would re-send them, or
// take the answer, from wherever the Location points (RFC 9700 section
// 4.12). No redirect at all is the simplest rule that is safe: the
// specifications these requests follow never need one.
func noRedirects(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// isRedirect reports whether status is a 3xx.
func isRedirect(status int) bool { return status >= 300 && status < 400 }

// redirectError is the error for a 3xx answer to a method request to u:
// it names the status and where it pointed, and wraps ErrRedirect.
func redirectError(method, u string, resp *http.Response) error {
	loc := resp.Header.Get("Location")
	if len(loc) > maxLocationInError {
		loc = loc[:maxLocationInError] + "..."
	}
	return fmt.Errorf("%w: %s %s answered HTTP %d (Location %q); redirects are not followed", ErrRedirect, method, u, resp.StatusCode, loc)
}
