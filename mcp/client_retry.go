package mcp

import (
	"context"
	"errors"
	"net"
	"net/url"
	"time"
)

// Retrying one leg of a carrier call (ClientOptions.LegRetries).

const (
	defaultLegRetries = 8
	legRetryFirst     = 250 * time.Millisecond
	legRetryMax       = 4 * time.Second
	// retryAfterCap bounds a server's Retry-After.
	retryAfterCap = 5 * time.Second
)

// doLeg sends l, sending it again while the failure says the same leg
// may succeed later (see ClientOptions.LegRetries). withState tells
// whether the leg carries a requestState.
func (c *Client) doLeg(ctx context.Context, l *wireRequest, withState bool) ([]byte, error) {
	retries := c.opts.LegRetries
	if retries == 0 {
		retries = defaultLegRetries
	}
	delay := legRetryFirst
	for attempt := 0; ; attempt++ {
		raw, err := c.do(ctx, l)
		if err == nil || attempt >= retries || ctx.Err() != nil {
			return raw, err
		}
		wait, ok := legRetryable(err, withState)
		if !ok {
			return raw, err
		}
		if wait <= 0 {
			wait = delay
			delay = min(2*delay, legRetryMax)
		}
		c.log.Debug("mcp: sending the leg again", "method", l.method, "target", l.target, "attempt", attempt+1, "wait", wait, "err", err)
		if err := c.sleep(ctx, min(wait, retryAfterCap)); err != nil {
			return nil, err
		}
	}
}

// legRetryable reports whether a leg that failed with err may succeed
// if sent again, and how long the server asked to wait (0: back off).
func legRetryable(err error, withState bool) (time.Duration, bool) {
	if d, ok := retryAfter(err); ok {
		return d, true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return 0, true // nothing was sent
	}
	if !withState {
		return 0, false
	}
	var hs *HTTPStatusError
	if errors.As(err, &hs) {
		switch hs.StatusCode {
		case 502, 503, 504:
			return 0, true
		}
		return 0, false
	}
	var ue *url.Error
	if errors.As(err, &ue) || errors.Is(err, errSSEEnded) {
		return 0, true
	}
	return 0, false
}
