package gateway

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Transport says how an upstream is reached.
type Transport string

const (
	// TransportStdio runs Upstream.Command as a child process (its own
	// process group) and speaks stdio to it.
	TransportStdio Transport = "stdio"
	// TransportHTTP speaks Streamable HTTP to Upstream.URL, in whichever
	// revision the server speaks (the client negotiates: 2026-07-28, else
	// a 2025 session, else HTTP+SSE).
	TransportHTTP Transport = "http"
	// TransportSSE speaks the HTTP+SSE transport of 2024-11-05 to
	// Upstream.URL (its event stream) from the start.
	TransportSSE Transport = "sse"
)

// Upstream configures one server behind the gateway. Exactly one of
// Command and URL is set. The zero values of the other fields are the
// defaults.
type Upstream struct {
	// Name identifies the upstream in health reports, logs, the _meta of
	// its entries and the gateway's sealed state. It must be non-empty,
	// unique, and at most 32 bytes of [A-Za-z0-9_.-].
	Name string
	// Prefix is put before the upstream's tool and prompt names (with
	// Options.Separator). Empty means Name.
	Prefix string

	// Command, Args, Env and Dir start a stdio upstream. Env entries
	// (KEY=VALUE) are added to the gateway's own environment, which is
	// where per-upstream credentials given as environment go.
	Command string
	Args    []string
	Env     []string
	Dir     string
	// Stderr receives a stdio upstream's standard error (its logs); nil
	// discards it.
	Stderr io.Writer

	// URL is the endpoint of an HTTP upstream; Transport says which
	// transport it speaks (empty means TransportHTTP).
	URL       string
	Transport Transport
	// Header is sent with every request to an HTTP upstream (the
	// upstream's credentials: Authorization, X-Api-Key, ...).
	Header http.Header
	// HTTPClient sends an HTTP upstream's requests: set it to a client
	// whose transport is an auth.Transport for OAuth upstreams. Nil means
	// a client of the transport's own.
	HTTPClient *http.Client

	// Timeout bounds each call to the upstream (each leg of it, and for a
	// call held across rounds each wait for the downstream's answer).
	// Zero means 60 s.
	Timeout time.Duration
	// MaxConcurrency bounds the calls in flight to the upstream; a call
	// past it waits for a slot within its Timeout. Zero means 16.
	MaxConcurrency int

	// Allow, when set, is who may see and use the upstream at all.
	// Tools, when set, narrows it per tool (by the upstream's own tool
	// name); a tool not named there follows Allow.
	Allow *Allow
	Tools map[string]*Allow
	// Ask is what the upstream may ask the downstream user during a call.
	// Nil means DefaultAskPolicy.
	Ask *AskPolicy
}

// Allow admits a downstream principal (the mcp.TokenInfo that
// authentication middleware such as auth.RequireBearer put in the
// request's context) when any of its lists matches: one of Scopes is
// among the token's scopes, or its subject is in Subjects, or its
// client id in ClientIDs. An Allow with every list empty admits nobody;
// a request without a token is admitted only by a nil *Allow.
type Allow struct {
	Scopes    []string
	Subjects  []string
	ClientIDs []string
}

// AskPolicy says which of an upstream's questions reach the downstream
// user. A question refused by it, or that the downstream client cannot
// answer (it did not declare the capability), is answered to the
// upstream as declined: an elicitation with action "decline", roots
// with an empty list, sampling with a JSON-RPC error.
type AskPolicy struct {
	// Forms lets the upstream elicit form input.
	Forms bool
	// URLHosts lists the hosts (exact, case-insensitive) a URL-mode
	// elicitation may point to; empty refuses every URL elicitation.
	URLHosts []string
	// Sampling lets the upstream ask for LLM completions.
	Sampling bool
	// Roots lets the upstream list the client's roots.
	Roots bool
}

// DefaultAskPolicy is the policy of an upstream whose Ask is nil: forms,
// sampling and roots pass, URL elicitation is refused (no host is
// allowed until one is named).
var DefaultAskPolicy = AskPolicy{Forms: true, Sampling: true, Roots: true}

const (
	defaultTimeout     = 60 * time.Second
	defaultConcurrency = 16
	maxUpstreamName    = 32
)

func (u *Upstream) timeout() time.Duration {
	if u.Timeout > 0 {
		return u.Timeout
	}
	return defaultTimeout
}

func (u *Upstream) concurrency() int {
	if u.MaxConcurrency > 0 {
		return u.MaxConcurrency
	}
	return defaultConcurrency
}

func (u *Upstream) prefix() string {
	if u.Prefix != "" {
		return u.Prefix
	}
	return u.Name
}

func (u *Upstream) askPolicy() *AskPolicy {
	if u.Ask != nil {
		return u.Ask
	}
	return &DefaultAskPolicy
}

func (u *Upstream) transport() Transport {
	switch {
	case u.Command != "":
		return TransportStdio
	case u.Transport == "":
		return TransportHTTP
	}
	return u.Transport
}

// validate checks one upstream's configuration.
func (u *Upstream) validate() error {
	if u.Name == "" || len(u.Name) > maxUpstreamName || !safeName(u.Name) {
		return fmt.Errorf("gateway: upstream name %q: want 1 to %d bytes of [A-Za-z0-9_.-]", u.Name, maxUpstreamName)
	}
	if p := u.prefix(); len(p) > maxUpstreamName || !safeName(p) {
		return fmt.Errorf("gateway: upstream %s: prefix %q: want at most %d bytes of [A-Za-z0-9_.-]", u.Name, p, maxUpstreamName)
	}
	switch {
	case u.Command != "" && u.URL != "":
		return fmt.Errorf("gateway: upstream %s: both a command and a URL", u.Name)
	case u.Command == "" && u.URL == "":
		return fmt.Errorf("gateway: upstream %s: neither a command nor a URL", u.Name)
	case u.URL != "":
		pu, err := url.Parse(u.URL)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("gateway: upstream %s: URL %q is not an absolute http(s) URL", u.Name, u.URL)
		}
		if t := u.transport(); t != TransportHTTP && t != TransportSSE {
			return fmt.Errorf("gateway: upstream %s: transport %q: want %q or %q", u.Name, t, TransportHTTP, TransportSSE)
		}
	}
	if u.Timeout < 0 || u.MaxConcurrency < 0 {
		return fmt.Errorf("gateway: upstream %s: negative timeout or concurrency", u.Name)
	}
	return nil
}

func validateUpstreams(ups []Upstream) error {
	if len(ups) == 0 {
		return errors.New("gateway: no upstreams")
	}
	names := make(map[string]bool, len(ups))
	for i := range ups {
		if err := ups[i].validate(); err != nil {
			return err
		}
		if names[ups[i].Name] {
			return fmt.Errorf("gateway: upstream name %q given twice", ups[i].Name)
		}
		names[ups[i].Name] = true
	}
	return nil
}
