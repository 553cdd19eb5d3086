package auth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clockedVerifier is a verifier of is's tokens on clk whose keys are
// stale after a minute, which also caps the backoff.
func clockedVerifier(t *testing.T, is *issuer, clk *fakeClock, fetchTimeout time.Duration) *JWTVerifier {
	t.Helper()
	v, err := NewJWTVerifier(JWTOptions{Issuer: testIssuer, Audience: testAudience, JWKSURL: is.url, Now: clk.Now,
		RefreshInterval: time.Minute, MinRefreshInterval: time.Minute, FetchTimeout: fetchTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitKeyFetch waits until v has no key set fetch in flight.
func waitKeyFetch(t *testing.T, v *JWTVerifier) {
	t.Helper()
	v.mu.Lock()
	f := v.flight
	v.mu.Unlock()
	if f == nil {
		return
	}
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the key set fetch did not end")
	}
}

// waitEntered waits until a request reached is's hanging JWKS endpoint.
func waitEntered(t *testing.T, is *issuer) {
	t.Helper()
	select {
	case <-is.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no key set request reached the endpoint")
	}
}

func fetchInFlight(v *JWTVerifier) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.flight != nil
}

// With the JWKS endpoint hanging and the keys stale, concurrent valid
// tokens verify at once with the keys at hand: one background refresh
// for all of them, which none waits for.
func TestKeySetOutageIsNotAFullOutage(t *testing.T) {
	is := newIssuer(t)
	clk := newFakeClock()
	v := clockedVerifier(t, is, clk, time.Minute)
	ctx := context.Background()
	tok := is.sign(t, "rsa-1", jose.RS256, nil)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	is.mode.Store(jwksHang)
	clk.Advance(2 * time.Minute) // the keys are stale

	start := time.Now()
	errs := make(chan error, 10)
	for range 10 {
		go func() {
			_, err := v.Verify(ctx, tok)
			errs <- err
		}()
	}
	for range 10 {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("Verify with stale keys and a hanging key set endpoint: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a Verify call is blocked on the hanging key set fetch")
		}
	}
	elapsed := time.Since(start)
	// The refresh reached the endpoint and is still blocked there (its
	// handler returns when the test ends): no call waited for it.
	waitEntered(t, is)
	if !fetchInFlight(v) {
		t.Fatal("the refresh is not in flight any more; the test proves nothing")
	}
	for range 20 {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := is.fetches.Load(); n != 2 {
		t.Errorf("%d key set requests, want 2: the first fetch and one refresh shared by every caller", n)
	}
	if elapsed > 2*time.Second {
		t.Errorf("10 concurrent verifications took %s", elapsed)
	}
}

// A failing JWKS endpoint gets no more than a backoff allows (doubling
// from a second, jittered), however many tokens come in, and the stale
// keys keep verifying them.
func TestFailingKeySetEndpointIsNotHammered(t *testing.T) {
	is := newIssuer(t)
	clk := newFakeClock()
	v := clockedVerifier(t, is, clk, time.Minute)
	ctx := context.Background()
	tok := is.sign(t, "rsa-1", jose.RS256, nil)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	is.mode.Store(jwksFail)
	clk.Advance(2 * time.Minute)

	// 600 tokens over a simulated minute, 100 ms apart.
	var attempts []time.Time
	start := clk.Now()
	last := is.fetches.Load()
	for range 600 {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("the stale keys were dropped after a failed refresh: %v", err)
		}
		waitKeyFetch(t, v)
		if n := is.fetches.Load(); n != last {
			if n != last+1 {
				t.Fatalf("%d key set requests at once", n-last)
			}
			last = n
			attempts = append(attempts, clk.Now())
		}
		clk.Advance(100 * time.Millisecond)
	}
	// Backoffs of [0.5, 1] s, [1, 2] s, [2, 4] s, ...: 6 or 7 attempts
	// in 60 s (without backoff, 600).
	if len(attempts) < 5 || len(attempts) > 8 {
		t.Fatalf("%d refresh attempts in a simulated minute of failures, want 6 or 7", len(attempts))
	}
	if !attempts[0].Equal(start) {
		t.Errorf("the first refresh came %s after the keys went stale", attempts[0].Sub(start))
	}
	for i := 1; i < len(attempts); i++ {
		full := time.Second << (i - 1)
		gap := attempts[i].Sub(attempts[i-1])
		if gap < full/2 || gap > full+100*time.Millisecond {
			t.Errorf("gap %d between attempts %s, want between %s and %s", i, gap, full/2, full)
		}
	}
	// Unknown key ids do not add fetches during the backoff either.
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	before := is.fetches.Load()
	for range 50 {
		if _, err := v.Verify(ctx, signWith(t, stranger, "unknown", jose.RS256, nil)); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("unknown kid: %v", err)
		}
		waitKeyFetch(t, v)
	}
	if n := is.fetches.Load() - before; n > 1 {
		t.Errorf("%d key set requests for 50 unknown key ids during an outage", n)
	}
}

// Once the JWKS endpoint answers again, the next attempt after the
// backoff brings the keys (a rotated one included) back: for a verifier
// holding stale keys, and for one that never got any.
func TestKeysComeBackAfterTheKeySetEndpointRecovers(t *testing.T) {
	ctx := context.Background()
	t.Run("stale keys", func(t *testing.T) {
		is := newIssuer(t)
		clk := newFakeClock()
		v := clockedVerifier(t, is, clk, time.Minute)
		tok := is.sign(t, "rsa-1", jose.RS256, nil)
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		is.mode.Store(jwksFail)
		clk.Advance(2 * time.Minute)
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		waitKeyFetch(t, v)
		if is.fetches.Load() != 2 {
			t.Fatalf("%d key set requests, want 2", is.fetches.Load())
		}
		is.addRSA(t, "rsa-2")
		is.mode.Store(jwksServe)
		clk.Advance(time.Minute) // past the longest first backoff
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		waitKeyFetch(t, v)
		v.mu.Lock()
		fetched, failures := v.fetched, v.failures
		v.mu.Unlock()
		if !fetched.Equal(clk.Now()) || failures != 0 {
			t.Fatalf("after recovery: keys fetched at %s (now %s), %d failures", fetched, clk.Now(), failures)
		}
		n := is.fetches.Load()
		if _, err := v.Verify(ctx, is.sign(t, "rsa-2", jose.RS256, nil)); err != nil {
			t.Fatalf("the key rotated in during the outage: %v", err)
		}
		if is.fetches.Load() != n {
			t.Error("the refreshed set did not have the rotated key")
		}
	})
	t.Run("no keys yet", func(t *testing.T) {
		is := newIssuer(t)
		is.mode.Store(jwksFail)
		clk := newFakeClock()
		v := clockedVerifier(t, is, clk, time.Minute)
		tok := is.sign(t, "rsa-1", jose.RS256, nil)
		if _, err := v.Verify(ctx, tok); err == nil || !strings.Contains(err.Error(), "500") {
			t.Fatalf("first fetch failing: %v, want the fetch's error", err)
		}
		for range 20 {
			if _, err := v.Verify(ctx, tok); err == nil || !strings.Contains(err.Error(), "unavailable") {
				t.Fatalf("during the backoff: %v, want the key set unavailable", err)
			}
		}
		if n := is.fetches.Load(); n != 1 {
			t.Errorf("%d key set requests during the backoff, want 1", n)
		}
		is.mode.Store(jwksServe)
		clk.Advance(time.Minute)
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatalf("after recovery: %v", err)
		}
	})
}

// A token naming an unknown key makes its caller wait for one fetch at
// most, bounded by FetchTimeout and the caller's context; concurrent
// callers share it, and tokens with known keys do not wait meanwhile.
func TestUnknownKeyIDWaitIsBounded(t *testing.T) {
	ctx := context.Background()
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	t.Run("fetch timeout", func(t *testing.T) {
		is := newIssuer(t)
		clk := newFakeClock()
		v := clockedVerifier(t, is, clk, 200*time.Millisecond)
		tok := is.sign(t, "rsa-1", jose.RS256, nil)
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
		is.mode.Store(jwksHang)
		unknown := signWith(t, stranger, "rotated", jose.RS256, nil)
		errs := make(chan error, 5)
		for range 5 {
			go func() {
				_, err := v.Verify(ctx, unknown)
				errs <- err
			}()
		}
		waitEntered(t, is)
		if _, err := v.Verify(ctx, tok); err != nil { // while the fetch hangs
			t.Fatal(err)
		}
		for range 5 {
			select {
			case err := <-errs:
				if !errors.Is(err, ErrInvalidToken) {
					t.Errorf("unknown kid with a hanging endpoint: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("an unknown kid's caller is still waiting past FetchTimeout")
			}
		}
		if n := is.fetches.Load(); n != 2 {
			t.Errorf("%d key set requests, want 2 (one shared by the unknown kids)", n)
		}
	})
	t.Run("caller's context", func(t *testing.T) {
		is := newIssuer(t)
		clk := newFakeClock()
		v := clockedVerifier(t, is, clk, time.Hour)
		if _, err := v.Verify(ctx, is.sign(t, "rsa-1", jose.RS256, nil)); err != nil {
			t.Fatal(err)
		}
		is.mode.Store(jwksHang)
		cctx, cancel := context.WithCancel(ctx)
		errs := make(chan error, 1)
		go func() {
			_, err := v.Verify(cctx, signWith(t, stranger, "rotated", jose.RS256, nil))
			errs <- err
		}()
		waitEntered(t, is)
		cancel()
		select {
		case err := <-errs:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("canceled caller: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a canceled caller is still waiting for the key set")
		}
	})
}

// The JWKS fetch follows no redirect (with the caller's HTTPClient too):
// the keys that decide which tokens are valid come from the JWKS URL
// only.
func TestKeySetFetchFollowsNoRedirects(t *testing.T) {
	s := newSink(t)
	is := newIssuer(t)
	jwks := httptest.NewServer(http.RedirectHandler(is.url, http.StatusTemporaryRedirect))
	t.Cleanup(jwks.Close)
	hc := &http.Client{}
	v, err := NewJWTVerifier(JWTOptions{Issuer: testIssuer, Audience: testAudience, JWKSURL: jwks.URL, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(context.Background(), is.sign(t, "rsa-1", jose.RS256, nil))
	checkNotFollowed(t, err, s, http.StatusTemporaryRedirect)
	if n := is.fetches.Load(); n != 0 {
		t.Errorf("the redirect target served the key set %d times", n)
	}
	if hc.CheckRedirect != nil {
		t.Error("NewJWTVerifier modified the caller's http.Client")
	}
}
