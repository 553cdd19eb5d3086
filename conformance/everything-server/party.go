package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/roundtrip-mcp/roundtrip/internal/netaddr"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redisrate"
)

// partyFlags are -trusted-proxies and -rate-limit: who a client is
// behind a proxy, and how fast one client may go.
type partyFlags struct {
	proxies string // -trusted-proxies: CIDRs or bare IPs, comma-separated
	rate    string // -rate-limit: N/s or N/s:BURST
}

// partyFlagsOf registers the flags on fs.
func partyFlagsOf(fs *flag.FlagSet) *partyFlags {
	p := &partyFlags{}
	fs.StringVar(&p.proxies, "trusted-proxies", "", "comma-separated CIDRs (or bare IPs) of the reverse proxies in front: from them, a client's address (its party for the per-client bounds) is X-Forwarded-For's or Forwarded's")
	fs.StringVar(&p.rate, "rate-limit", "", "requests a second per client, N/s, with an optional burst, N/s:B (default burst: N); shared through Redis when -session-store or -guard names one, else in this process")
	return p
}

// httpOptions turns the flags into the HTTP handlers' options. sf are
// the state flags: a Redis -guard (or -session-store, when the binary has
// that flag) makes the rate limit the fleet's.
func (p *partyFlags) httpOptions(fs *flag.FlagSet, sf stateFlags) (mcp.HTTPOptions, error) {
	var o mcp.HTTPOptions
	var err error
	if o.TrustedProxies, err = netaddr.ParsePrefixes(p.proxies); err != nil {
		return o, fmt.Errorf("-trusted-proxies: %w", err)
	}
	if p.rate == "" {
		return o, nil
	}
	rate, burst, err := parseRate(p.rate)
	if err != nil {
		return o, fmt.Errorf("-rate-limit: %w", err)
	}
	c, err := sharedRedis(fs, sf)
	if err != nil {
		return o, fmt.Errorf("-rate-limit: %w", err)
	}
	if c == nil {
		o.RateLimit = mcp.NewRateLimiter(rate, burst)
	} else {
		o.RateLimit = redisrate.New(c, redisrate.Options{Rate: rate, Burst: burst}).Allow
	}
	return o, nil
}

// sharedRedis is a client of the Redis the other flags name, or nil.
func sharedRedis(fs *flag.FlagSet, sf stateFlags) (redis.UniversalClient, error) {
	if f := fs.Lookup("session-store"); f != nil && isRedisURL(f.Value.String()) {
		return redisOfURL(f.Value.String())
	}
	switch {
	case sf.guard == "" || sf.guard == "memory":
		return nil, nil
	case sf.sentinels != "":
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: sf.guard, SentinelAddrs: strings.Split(sf.sentinels, ","),
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second}), nil
	}
	return redisOfURL(sf.guard)
}

func isRedisURL(s string) bool {
	for _, p := range []string{"redis://", "rediss://", "unix://"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func redisOfURL(u string) (redis.UniversalClient, error) {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return nil, err
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = time.Second, time.Second, time.Second
	return redis.NewClient(opts), nil
}

// parseRate reads N/s or N/s:B.
func parseRate(s string) (rate float64, burst int, err error) {
	r, b, hasBurst := strings.Cut(s, ":")
	n, ok := strings.CutSuffix(r, "/s")
	if !ok {
		return 0, 0, errors.New("want N/s or N/s:BURST, e.g. 10/s:20")
	}
	if rate, err = strconv.ParseFloat(n, 64); err != nil || !(rate > 0) || math.IsInf(rate, 0) {
		return 0, 0, fmt.Errorf("%q: the rate must be a positive number", n)
	}
	burst = max(int(math.Ceil(rate)), 1)
	if hasBurst {
		if burst, err = strconv.Atoi(b); err != nil || burst < 1 {
			return 0, 0, fmt.Errorf("%q: the burst must be a positive integer", b)
		}
	}
	return rate, burst, nil
}
