package mcp

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The party a request counts against, for every per-party bound of the
// HTTP handlers (the sessions of both session registries, their requests
// in flight, HTTPOptions.RateLimit): LegacyHTTPOptions.QuotaKey, else the
// verified principal, else the client's address (an IPv6 address by its
// /64). The client's address is the peer's (RemoteAddr), unless the peer
// is one of HTTPOptions.TrustedProxies: then it is the right-most address
// of X-Forwarded-For or Forwarded (RFC 7239, for=) that is not itself a
// trusted proxy. Headers from any other peer are ignored, so that a
// client cannot choose its party.

const (
	// maxForwardedBytes and maxForwardedHops bound what is read of the
	// forwarding headers; a longer chain is malformed.
	maxForwardedBytes = 4 << 10
	maxForwardedHops  = 32
)

// partyKey is the context key of the client's address, set by the HTTP
// handlers when they have trusted proxies.
type partyKey struct{}

// withClientAddress returns r with the party address of its client
// (clientAddress) computed once, when proxies is not empty; else r.
func withClientAddress(r *http.Request, proxies []netip.Prefix) *http.Request {
	if len(proxies) == 0 {
		return r
	}
	if _, ok := r.Context().Value(partyKey{}).(string); ok {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), partyKey{}, forwardedParty(r.RemoteAddr, r.Header, proxies)))
}

// clientAddress is the party address of r's client: what
// withClientAddress found, else the peer's.
func clientAddress(r *http.Request) string {
	if a, ok := r.Context().Value(partyKey{}).(string); ok {
		return a
	}
	return remoteParty(r.RemoteAddr)
}

// partyOf names the party r counts against: quotaKey's answer, else the
// principal, else the client's address.
func partyOf(r *http.Request, quotaKey func(*http.Request) string, principal string) string {
	if quotaKey != nil {
		if k := quotaKey(r); k != "" {
			return "key " + k
		}
	}
	if principal != "" {
		return "principal " + principal
	}
	return "address " + clientAddress(r)
}

// forwardedParty is the party address (remoteParty's form) of a request
// from peer (a RemoteAddr) with header h, behind proxies.
func forwardedParty(peer string, h http.Header, proxies []netip.Prefix) string {
	if a, ok := forwardedClient(peer, h, proxies); ok {
		return addrParty(a)
	}
	return remoteParty(peer)
}

// forwardedClient is the client's address when peer is a trusted proxy
// and the forwarding headers name it; false otherwise (an untrusted
// peer, no headers, or malformed ones: the peer's address applies).
// With both X-Forwarded-For and Forwarded, both must name the same
// client: a proxy appends to one and passes the other on as the client
// sent it.
func forwardedClient(peer string, h http.Header, proxies []netip.Prefix) (netip.Addr, bool) {
	p, ok := parseNode(peer)
	if !ok || !trusted(p, proxies) {
		return netip.Addr{}, false
	}
	xff, fwd := h.Values("X-Forwarded-For"), h.Values("Forwarded")
	if len(xff) == 0 && len(fwd) == 0 {
		return netip.Addr{}, false
	}
	var a, b netip.Addr
	if len(xff) > 0 {
		hops, ok := splitXFF(xff)
		if !ok {
			return netip.Addr{}, false
		}
		if a, ok = rightmostUntrusted(hops, proxies); !ok {
			return netip.Addr{}, false
		}
	}
	if len(fwd) > 0 {
		hops, ok := splitForwarded(fwd)
		if !ok {
			return netip.Addr{}, false
		}
		if b, ok = rightmostUntrusted(hops, proxies); !ok {
			return netip.Addr{}, false
		}
		if a.IsValid() && a != b {
			return netip.Addr{}, false
		}
		a = b
	}
	return a, true
}

// rightmostUntrusted walks hops right to left and returns the first that
// is not a trusted proxy; when all are, the left-most. A hop that is not
// an address (unknown, an obfuscated identifier, garbage) ends the walk
// with false: the trusted proxy next to it did not name its client.
func rightmostUntrusted(hops []string, proxies []netip.Prefix) (netip.Addr, bool) {
	var a netip.Addr
	for i := len(hops) - 1; i >= 0; i-- {
		var ok bool
		if a, ok = parseNode(hops[i]); !ok {
			return netip.Addr{}, false
		}
		if !trusted(a, proxies) {
			return a, true
		}
	}
	return a, a.IsValid()
}

func trusted(a netip.Addr, proxies []netip.Prefix) bool {
	for _, p := range proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// splitXFF splits the X-Forwarded-For lines into their hops, within the
// bounds; false when over them or a hop is empty.
func splitXFF(lines []string) ([]string, bool) {
	n := 0
	var hops []string
	for _, l := range lines {
		if n += len(l); n > maxForwardedBytes {
			return nil, false
		}
		for hop := range strings.SplitSeq(l, ",") {
			hop = strings.TrimSpace(hop)
			if hop == "" || len(hops) == maxForwardedHops {
				return nil, false
			}
			hops = append(hops, hop)
		}
	}
	return hops, true
}

// splitForwarded returns the for= node of each element of the Forwarded
// lines (RFC 7239: elements separated by commas, pairs by semicolons,
// values tokens or quoted strings), within the bounds; false when over
// them, when an element has no for= (or two), or the syntax is broken.
func splitForwarded(lines []string) ([]string, bool) {
	n := 0
	var hops []string
	for _, l := range lines {
		if n += len(l); n > maxForwardedBytes {
			return nil, false
		}
		var node string
		seen := false
		i := 0
		for {
			// One pair: name "=" value.
			for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
				i++
			}
			eq := strings.IndexByte(l[i:], '=')
			if eq <= 0 {
				return nil, false
			}
			name := strings.TrimSpace(l[i : i+eq])
			i += eq + 1
			var val string
			if i < len(l) && l[i] == '"' {
				var b strings.Builder
				i++
				closed := false
				for i < len(l) {
					c := l[i]
					i++
					if c == '\\' && i < len(l) {
						b.WriteByte(l[i])
						i++
						continue
					}
					if c == '"' {
						closed = true
						break
					}
					b.WriteByte(c)
				}
				if !closed {
					return nil, false
				}
				val = b.String()
			} else {
				j := i
				for j < len(l) && l[j] != ';' && l[j] != ',' && l[j] != ' ' && l[j] != '\t' {
					j++
				}
				val = l[i:j]
				i = j
			}
			if strings.EqualFold(name, "for") {
				if seen {
					return nil, false
				}
				node, seen = val, true
			}
			for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
				i++
			}
			if i == len(l) || l[i] == ',' {
				// The end of an element.
				if !seen || len(hops) == maxForwardedHops {
					return nil, false
				}
				hops = append(hops, node)
				node, seen = "", false
				if i == len(l) {
					break
				}
				i++
				continue
			}
			if l[i] != ';' {
				return nil, false
			}
			i++
		}
	}
	return hops, true
}

// parseNode parses one hop: an address, with or without a port, IPv6 in
// brackets when it has one (or always, in Forwarded).
func parseNode(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap(), true
	}
	host := s
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		host = s[1:end]
		if rest := s[end+1:]; rest != "" && (rest[0] != ':' || len(rest) == 1) {
			return netip.Addr{}, false
		}
	} else if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	} else {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

// remoteParty is the address part of a RemoteAddr that names one client:
// the IPv4 address, or the /64 of an IPv6 address (a single host usually
// has a whole /64 to pick from).
func remoteParty(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return addrParty(ip.WithZone("").Unmap())
}

// addrParty is remoteParty of an address: IPv4 as is, IPv6 by its /64.
func addrParty(a netip.Addr) string {
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}

// ---- the rate limit (HTTPOptions.RateLimit) ----

// rateLogInterval is how often a failing limiter is logged.
const rateLogInterval = time.Minute

// rateLimited asks the handler's RateLimit about r's party; when the
// party is past its rate it answers the request (429 with Retry-After and
// ErrTemporarilyUnavailable for id) and reports true. A limiter that
// fails lets the request through, logged once per rateLogInterval.
func (h *httpHandler) rateLimited(w http.ResponseWriter, r *http.Request, id jsonrpc.ID) bool {
	f := h.opts.RateLimit
	if f == nil {
		return false
	}
	principal, err := h.s.principalOf(r)
	if err != nil {
		principal = ""
	}
	after, err := f(r.Context(), partyOf(r, h.opts.Legacy.QuotaKey, principal))
	if err != nil {
		now := time.Now().UnixNano()
		if last := h.rateLogged.Load(); now-last >= int64(rateLogInterval) && h.rateLogged.CompareAndSwap(last, now) {
			h.s.log.Warn("mcp: the rate limiter failed; requests go through unlimited", "err", err)
		}
		return false
	}
	if after <= 0 {
		return false
	}
	w.Header().Set("Retry-After", retryAfterHeader(after))
	writeHTTPError(w, http.StatusTooManyRequests, id, jsonrpc.NewErrorData(codeTemporarilyUnavailable, ErrTemporarilyUnavailable.Message, struct {
		Reason       string `json:"reason"`
		RetryAfterMs int64  `json:"retryAfterMs"`
		Detail       string `json:"detail"`
	}{reasonUnavailable, after.Milliseconds(), "too many requests from this client: retry after the delay"}))
	return true
}

// principalOf is the verified principal of r (RequestState.Principal,
// else the token's).
func (s *Server) principalOf(r *http.Request) (string, error) {
	if f := s.opts.RequestState.Principal; f != nil {
		return f(r.Context())
	}
	return defaultPrincipal(r.Context())
}

// ---- an in-process limiter ----

// maxRateParties bounds the parties NewRateLimiter tracks at once.
const maxRateParties = 1 << 16

type rateLimiter struct {
	interval time.Duration // between two requests at the rate
	burst    time.Duration // how far ahead of the rate a party may be
	now      func() time.Time

	mu  sync.Mutex
	tat map[string]time.Time // each party's theoretical arrival time (GCRA)
}

// NewRateLimiter returns an in-process HTTPOptions.RateLimit: each party
// may make perSecond requests a second, and up to burst (at least 1) at
// once (the generic cell rate algorithm). A refused request is told when
// its next one would be allowed. It tracks at most 65536 parties; past
// that it forgets those back at their full burst, and all of them when
// that frees less than a quarter. For a fleet, share one limit through
// Redis instead (redis/redisrate). It panics when perSecond is not
// positive.
func NewRateLimiter(perSecond float64, burst int) func(ctx context.Context, party string) (time.Duration, error) {
	return newRateLimiter(perSecond, burst, time.Now).allow
}

func newRateLimiter(perSecond float64, burst int, now func() time.Time) *rateLimiter {
	if !(perSecond > 0) || math.IsInf(perSecond, 0) {
		panic("mcp: NewRateLimiter: the rate must be positive")
	}
	interval := time.Duration(float64(time.Second) / perSecond)
	return &rateLimiter{interval: interval, burst: time.Duration(max(burst, 1)-1) * interval,
		now: now, tat: make(map[string]time.Time)}
}

// allow is the GCRA: a request is allowed when the party's theoretical
// arrival time is at most burst ahead of now, and moves it one interval
// on. At maxRateParties, parties back at their full burst are forgotten,
// and all are when that frees too little (the bound holds memory, at the
// price of an amnesty).
func (l *rateLimiter) allow(_ context.Context, party string) (time.Duration, error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	tat, ok := l.tat[party]
	if !ok || tat.Before(now) {
		tat = now
	}
	if wait := tat.Sub(now) - l.burst; wait > 0 {
		return wait, nil
	}
	if !ok && len(l.tat) >= maxRateParties {
		for p, t := range l.tat {
			if !t.After(now) {
				delete(l.tat, p)
			}
		}
		if len(l.tat) > maxRateParties*3/4 {
			clear(l.tat) // so that a sweep frees a quarter at least: amortised O(1)
		}
	}
	l.tat[party] = tat.Add(l.interval)
	return 0, nil
}
