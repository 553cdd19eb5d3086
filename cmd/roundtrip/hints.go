package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// hintedError is an error with advice for the user: printed on its own
// line, and the "hint" member of a --json error.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() }
func (e *hintedError) Unwrap() error { return e.err }

// withHint attaches hint to err (nothing when hint is empty).
func withHint(err error, hint string) error {
	if err == nil || hint == "" {
		return err
	}
	return &hintedError{err: err, hint: hint}
}

// distance is the edit distance of a and b: insertions, deletions,
// substitutions and transpositions of neighbours each count one (the
// optimal string alignment distance; bytes: names are ASCII).
func distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// closest returns the candidate nearest to name: within a third of its
// length (at least 1, at most 3 edits), or one name starts with the
// other. "" when none is near.
func closest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	limit := min(max(len(name)/3, 1), 3)
	for _, c := range candidates {
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if d > limit && !(len(name) >= 3 && (strings.HasPrefix(c, name) || strings.HasPrefix(name, c))) {
			continue
		}
		if d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// didYouMean is the hint for a mistyped name, or "".
func didYouMean(name string, candidates []string) string {
	if c := closest(name, candidates); c != "" && c != name {
		return fmt.Sprintf("did you mean %q?", c)
	}
	return ""
}

// flagHint suggests a defined flag for the error flag.Parse gives an
// undefined one ("flag provided but not defined: -jsn").
func flagHint(err error, fs *flag.FlagSet) string {
	const prefix = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return ""
	}
	name := strings.TrimPrefix(msg[len(prefix):], "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if c := closest(name, names); c != "" {
		return fmt.Sprintf("did you mean --%s?", c)
	}
	return ""
}

// normalizeURL adds a missing scheme: http:// (the usual scheme of a
// server one runs oneself; a note on stderr says so). ok is false when
// the result is still not an http(s) URL with a host.
func normalizeURL(raw string) (fixed string, assumed bool, ok bool) {
	fixed = raw
	if !strings.Contains(raw, "://") {
		fixed, assumed = "http://"+raw, true
	}
	u, err := url.Parse(fixed)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return raw, false, false
	}
	return fixed, assumed, true
}

// missingMCPHint tries, after a 404 from a URL without a path, the same
// server at /mcp: when it answers there the hint says so.
func (s *session) missingMCPHint(err error) string {
	var hs *mcp.HTTPStatusError
	if s.target.URL == "" || !errors.As(err, &hs) || hs.StatusCode != http.StatusNotFound {
		return ""
	}
	u, perr := url.Parse(s.target.URL)
	if perr != nil || (u.Path != "" && u.Path != "/") {
		return ""
	}
	u.Path = "/mcp"
	try := u.String()
	ctx, cancel := context.WithTimeout(s.ctx, 3*time.Second)
	defer cancel()
	c := mcp.NewClient(mcp.NewHTTPClientTransport(try, &mcp.HTTPClientOptions{Header: s.opts.headers.h}), &mcp.ClientOptions{
		Info: mcp.Implementation{Name: "roundtrip-cli", Version: version}})
	defer c.Close()
	if _, derr := c.Discover(ctx); derr != nil {
		return "the server answered 404: is the URL the server's MCP endpoint (often /mcp)?"
	}
	return fmt.Sprintf("did you mean %s? (an MCP server answers there)", try)
}
