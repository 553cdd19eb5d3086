package gateway

import (
	"context"
	"net/url"
	"slices"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// admits reports whether the request's principal passes a (nil passes
// everyone).
func (a *Allow) admits(ti *mcp.TokenInfo) bool {
	if a == nil {
		return true
	}
	if ti == nil {
		return false
	}
	for _, s := range a.Scopes {
		if slices.Contains(ti.Scopes, s) {
			return true
		}
	}
	return slices.Contains(a.Subjects, ti.Subject) && ti.Subject != "" ||
		slices.Contains(a.ClientIDs, ti.ClientID) && ti.ClientID != ""
}

// allowed applies an upstream's Allow and, for a tool, its Tools entry.
func (u *Upstream) allowed(ctx context.Context, kind mcp.FeatureKind, name string) bool {
	ti := mcp.TokenInfoFromContext(ctx)
	if !u.Allow.admits(ti) {
		return false
	}
	if kind == mcp.FeatureTool {
		if a, ok := u.Tools[name]; ok {
			return a.admits(ti)
		}
	}
	return true
}

// askAllowed applies an upstream's AskPolicy and the downstream client's
// capabilities to one question.
func askAllowed(p *AskPolicy, caps *mcp.ClientCapabilities, r mcp.InputRequest) bool {
	switch r := r.(type) {
	case *mcp.ElicitRequest:
		if caps.Elicitation == nil {
			return false
		}
		// The declaration as mcp.CanAsk reads it: an empty elicitation
		// object means form mode only.
		if r.Mode == mcp.ElicitModeURL {
			return caps.Elicitation.URL != nil && urlAllowed(p.URLHosts, r.URL)
		}
		return p.Forms && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil)
	case *mcp.CreateMessageRequest:
		return p.Sampling && caps.Sampling != nil
	case *mcp.ListRootsRequest:
		return p.Roots && caps.Roots != nil
	}
	return false
}

func urlAllowed(hosts []string, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" {
		return false
	}
	for _, h := range hosts {
		if strings.EqualFold(h, u.Hostname()) {
			return true
		}
	}
	return false
}

// refusal is the answer to a question the gateway does not pass on:
// declined, as the upstream would hear from a user who said no.
func refusal(r mcp.InputRequest) (answer []byte, err error) {
	switch r.(type) {
	case *mcp.ElicitRequest:
		return []byte(`{"action":"decline"}`), nil
	case *mcp.ListRootsRequest:
		return []byte(`{"roots":[]}`), nil
	}
	return nil, errRefused
}
