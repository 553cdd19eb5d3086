package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/roundtrip-mcp/roundtrip/gateway"
)

// gwSection is the "gateway" member of a config file: the options of
// "roundtrip gateway" that the mcpServers entries do not say. Other
// clients ignore it. Unknown members are an error here (a mistyped
// "allow" must not open an upstream to everybody).
type gwSection struct {
	// Separator joins a prefix and a tool or prompt name ("__").
	Separator string `json:"separator,omitempty"`
	// Timeout and MaxConcurrency are every upstream's defaults.
	Timeout        duration `json:"timeout,omitempty"`
	MaxConcurrency int      `json:"maxConcurrency,omitempty"`
	// RoundTimeout, MaxHeld and MaxHeldPerPrincipal bound the calls held
	// open to 2025 upstreams across rounds (gateway.Options).
	RoundTimeout        duration `json:"roundTimeout,omitempty"`
	MaxHeld             int      `json:"maxHeld,omitempty"`
	MaxHeldPerPrincipal int      `json:"maxHeldPerPrincipal,omitempty"`
	// StateKeysFile holds the request-state keys (base64url, one a line,
	// sealing key first), re-read when it changes; instances of a fleet
	// share it. StateTTL bounds a round.
	StateKeysFile string   `json:"stateKeysFile,omitempty"`
	StateTTL      duration `json:"stateTTL,omitempty"`
	// Redis is the fleet's shared store (redis://HOST:PORT/DB): the 2025
	// sessions and the single-use records.
	Redis string `json:"redis,omitempty"`
	// DrainTimeout bounds how long the calls in flight may take to end
	// after SIGTERM (30 s when zero).
	DrainTimeout duration `json:"drainTimeout,omitempty"`
	// AllowedHosts and AllowedOrigins are passed to the HTTP handler.
	AllowedHosts   []string `json:"allowedHosts,omitempty"`
	AllowedOrigins []string `json:"allowedOrigins,omitempty"`
	// Auth, when set, requires a bearer token of every request.
	Auth *gwAuth `json:"auth,omitempty"`
	// Servers are per-upstream options, by the name of the mcpServers
	// entry.
	Servers map[string]*gwServer `json:"servers,omitempty"`
	// Only, when set, names the mcpServers entries the gateway serves
	// (the others in the file are left alone).
	Only []string `json:"only,omitempty"`
}

// gwServer is one upstream's options.
type gwServer struct {
	Prefix         string              `json:"prefix,omitempty"`
	Timeout        duration            `json:"timeout,omitempty"`
	MaxConcurrency int                 `json:"maxConcurrency,omitempty"`
	Allow          *gwAllow            `json:"allow,omitempty"`
	Tools          map[string]*gwAllow `json:"tools,omitempty"`
	Ask            *gwAsk              `json:"ask,omitempty"`
}

// gwAllow is gateway.Allow as written in the file.
type gwAllow struct {
	Scopes    []string `json:"scopes,omitempty"`
	Subjects  []string `json:"subjects,omitempty"`
	ClientIDs []string `json:"clientIds,omitempty"`
}

// gwAsk is gateway.AskPolicy as written in the file; an absent member
// keeps the default (forms, sampling and roots on, no URL hosts).
type gwAsk struct {
	Forms    *bool    `json:"forms,omitempty"`
	URLHosts []string `json:"urlHosts,omitempty"`
	Sampling *bool    `json:"sampling,omitempty"`
	Roots    *bool    `json:"roots,omitempty"`
}

// gwAuth is the downstream bearer authentication: JWTs of an issuer
// (issuer, audience, jwksUrl), or a file of static tokens.
type gwAuth struct {
	Issuer   string `json:"issuer,omitempty"`
	Audience string `json:"audience,omitempty"`
	JWKSURL  string `json:"jwksUrl,omitempty"`
	// TokensFile is a JSON file {"TOKEN": {"subject": ..., "clientId":
	// ..., "scopes": [...]}} (for a small deployment or a test; it is a
	// file of secrets, keep it 0600).
	TokensFile string `json:"tokensFile,omitempty"`
	// Scopes are required of every token (403 otherwise).
	Scopes []string `json:"scopes,omitempty"`
	// Resource is the gateway's public URL (https://host/mcp): its
	// protected resource metadata is served and named in challenges.
	Resource             string   `json:"resource,omitempty"`
	AuthorizationServers []string `json:"authorizationServers,omitempty"`
}

// staticToken is one entry of the tokens file.
type staticToken struct {
	Subject  string   `json:"subject"`
	ClientID string   `json:"clientId,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
}

// duration is a time.Duration written as "30s", "5m".
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`a duration is a string such as "30s" or "5m"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("duration %q: want a non-negative duration such as \"30s\"", s)
	}
	*d = duration(v)
	return nil
}

// readGatewaySection reads the "gateway" member of the config file b
// (JSON with comments, as the CLI reads it); nil when there is none.
func readGatewaySection(b []byte) (*gwSection, error) {
	var top struct {
		Gateway json.RawMessage `json:"gateway"`
	}
	clean := stripJSONComments(b)
	if err := json.Unmarshal(clean, &top); err != nil {
		return nil, err
	}
	if len(top.Gateway) == 0 || string(top.Gateway) == "null" {
		return &gwSection{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(top.Gateway))
	dec.DisallowUnknownFields()
	var s gwSection
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf(`"gateway": %v`, err)
	}
	return &s, nil
}

func (a *gwAllow) allow() *gateway.Allow {
	if a == nil {
		return nil
	}
	return &gateway.Allow{Scopes: a.Scopes, Subjects: a.Subjects, ClientIDs: a.ClientIDs}
}

func (a *gwAsk) policy() *gateway.AskPolicy {
	if a == nil {
		return nil
	}
	p := gateway.DefaultAskPolicy
	set := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.Forms, a.Forms)
	set(&p.Sampling, a.Sampling)
	set(&p.Roots, a.Roots)
	p.URLHosts = a.URLHosts
	return &p
}

// gwUpstreams turns the config's servers into the gateway's upstreams:
// every server of the file (or those "only" names), in name order, with
// the options of its "gateway.servers" entry. A stdio command of a
// project file runs only with allowCommand (trust rules of the CLI:
// docs/design/cli.md).
func gwUpstreams(cfg *loadedConfig, sec *gwSection, allowCommand bool) ([]gateway.Upstream, []string, error) {
	names := cfg.names()
	if len(sec.Only) > 0 {
		for _, n := range sec.Only {
			if _, ok := cfg.servers[n]; !ok {
				return nil, nil, usagef(`gateway.only names %q, which %s does not define (it has: %s)`, n, cfg.path, strings.Join(names, ", "))
			}
		}
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return !slices.Contains(sec.Only, n) })
	}
	for n := range sec.Servers {
		if _, ok := cfg.servers[n]; !ok {
			return nil, nil, usagef(`gateway.servers has %q, which %s does not define (it has: %s)`, n, cfg.path, strings.Join(cfg.names(), ", "))
		}
	}
	var ups []gateway.Upstream
	var notes []string
	for _, n := range names {
		r, err := cfg.resolve(n)
		if err != nil {
			return nil, nil, err
		}
		if r.origin.project && len(r.target.Command) > 0 && !allowCommand {
			return nil, nil, usagef("server %q of the project file %s runs a command (%s): a project file is not yours, so the gateway starts it only with --allow-command (or define it in your own config, -c FILE)",
				n, r.origin.path, strings.Join(r.target.Command, " "))
		}
		u := gateway.Upstream{Name: n, Timeout: time.Duration(sec.Timeout), MaxConcurrency: sec.MaxConcurrency}
		if len(r.target.Command) > 0 {
			u.Command, u.Args, u.Env, u.Dir = r.target.Command[0], r.target.Command[1:], r.env, r.target.Dir
			if len(r.unset) > 0 {
				notes = append(notes, fmt.Sprintf("server %q: env members set to null (%s) are inherited: the gateway adds to its environment and cannot unset", n, strings.Join(r.unset, ", ")))
			}
		} else {
			u.URL = r.target.URL
			if r.sse {
				u.Transport = gateway.TransportSSE
			}
			if len(r.headers) > 0 {
				u.Header = http.Header{}
				for k, v := range r.headers {
					u.Header.Set(k, v)
				}
			}
		}
		if o := sec.Servers[n]; o != nil {
			u.Prefix = o.Prefix
			if o.Timeout != 0 {
				u.Timeout = time.Duration(o.Timeout)
			}
			if o.MaxConcurrency != 0 {
				u.MaxConcurrency = o.MaxConcurrency
			}
			u.Allow = o.Allow.allow()
			if len(o.Tools) > 0 {
				u.Tools = map[string]*gateway.Allow{}
				for t, a := range o.Tools {
					if a == nil {
						return nil, nil, usagef(`gateway.servers.%s.tools.%s: null (write {"scopes": [...]}; {} admits nobody)`, n, t)
					}
					u.Tools[t] = a.allow()
				}
			}
			u.Ask = o.Ask.policy()
		}
		ups = append(ups, u)
	}
	if len(ups) == 0 {
		return nil, nil, usagef("%s: no servers to serve", cfg.path)
	}
	return ups, notes, nil
}

// loadGatewayConfig reads the servers and the gateway section: from
// explicit (-c FILE, else $ROUNDTRIP_CONFIG: the user's own, the only
// file read), else the user's own config merged with ./.mcp.json as the
// CLI does (the gateway section then comes from the user's own file
// only).
func loadGatewayConfig(explicit string) (*loadedConfig, *gwSection, error) {
	cfg, err := loadConfig(explicit)
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		return nil, nil, usagef("no config file (give -c FILE: an mcpServers file; looked for %s)", strings.Join(configCandidates(), ", "))
	}
	own := explicit
	if own == "" {
		own = os.Getenv(envConfig)
	}
	if own == "" {
		own = userConfig()
	}
	sec := &gwSection{}
	if own != "" {
		b, err := os.ReadFile(own)
		switch {
		case err == nil:
			if sec, err = readGatewaySection(b); err != nil {
				return nil, nil, usagef("config %s: %v", own, err)
			}
		case !errors.Is(err, os.ErrNotExist):
			return nil, nil, usagef("config: %v", err)
		}
	}
	return cfg, sec, nil
}
