package redisdpop

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/roundtrip-mcp/roundtrip/auth"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/redis/redistest"
)

const resource = "https://mcp.example/mcp"

// client is a DPoP client key and a token bound to it.
type client struct {
	signer jose.Signer
	jkt    string
}

func newClient(t *testing.T) *client {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := (&jose.JSONWebKey{Key: k.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return &client{signer: s, jkt: base64.RawURLEncoding.EncodeToString(sum)}
}

// proof is a fresh proof for a POST to resource presenting "bound".
func (c *client) proof(t *testing.T, jti string) string {
	t.Helper()
	ath := sha256.Sum256([]byte("bound"))
	p, err := jwt.Signed(c.signer).Claims(map[string]any{"jti": jti, "htm": "POST", "htu": resource,
		"iat": time.Now().Unix(), "ath": base64.RawURLEncoding.EncodeToString(ath[:])}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// instance is one resource server of the fleet: RequireBearer with DPoP
// and the shared replay cache on its own connection to the store.
func instance(t *testing.T, srv *redistest.Server, c *client) http.Handler {
	return auth.RequireBearer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}), &auth.BearerOptions{
		Verifier: auth.TokenVerifierFunc(func(ctx context.Context, token string) (*mcp.TokenInfo, error) {
			if token != "bound" {
				return nil, auth.ErrInvalidToken
			}
			return &mcp.TokenInfo{Subject: "u", Extra: map[string]any{"cnf": map[string]any{"jkt": c.jkt}}}, nil
		}),
		DPoP:   &auth.DPoPVerifyOptions{Required: true, ReplayCache: &ReplayCache{Client: srv.Client(), Prefix: "t:"}},
		Logger: slog.New(slog.DiscardHandler),
	})
}

func send(h http.Handler, proof string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, resource, strings.NewReader("{}"))
	r.Header.Set("Authorization", "DPoP bound")
	r.Header.Set("DPoP", proof)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestAProofIsAcceptedOnceAcrossTheFleet: two instances sharing the
// store; a proof accepted by one is refused by the other (and by itself)
// with the invalid_dpop_proof challenge; a fresh proof passes on either.
// Each proof is one key, living no longer than the proof's window.
func TestAProofIsAcceptedOnceAcrossTheFleet(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, false)
	c := newClient(t)
	a, b := instance(t, srv, c), instance(t, srv, c)
	p := c.proof(t, "jti-1")
	if w := send(a, p); w.Code != http.StatusNoContent {
		t.Fatalf("first use on A: %d %q", w.Code, w.Header().Values("WWW-Authenticate"))
	}
	for name, h := range map[string]http.Handler{"B": b, "A": a} {
		w := send(h, p)
		ch, err := auth.ParseChallenges(w.Header().Values("WWW-Authenticate"))
		if w.Code != http.StatusUnauthorized || err != nil || len(ch) != 1 || ch[0].Scheme != "DPoP" || ch[0].Param("error") != "invalid_dpop_proof" {
			t.Errorf("replay on %s: %d %q", name, w.Code, w.Header().Values("WWW-Authenticate"))
		}
	}
	if w := send(b, c.proof(t, "jti-2")); w.Code != http.StatusNoContent {
		t.Errorf("a fresh proof on B: %d", w.Code)
	}
	ctx := context.Background()
	keys, err := srv.Client().Keys(ctx, "t:*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %v, %v; want one per accepted proof", keys, err)
	}
	for _, k := range keys {
		// MaxAge (5 min) and twice the leeway (15 s).
		if ttl := srv.Client().PTTL(ctx, k).Val(); ttl <= 4*time.Minute || ttl > 5*time.Minute+30*time.Second {
			t.Errorf("key %s TTL %v", k, ttl)
		}
	}
}

// TestAStoreOutageRefusesProofs: with the store down, a request with a
// proof gets 503 (fail closed), and passes again once it is back.
func TestAStoreOutageRefusesProofs(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, false)
	c := newClient(t)
	h := instance(t, srv, c)
	srv.Kill()
	if w := send(h, c.proof(t, "jti-1")); w.Code != http.StatusServiceUnavailable {
		t.Errorf("store down: %d, want 503", w.Code)
	}
	srv.Start()
	if w := send(h, c.proof(t, "jti-2")); w.Code != http.StatusNoContent {
		t.Errorf("store back: %d", w.Code)
	}
}

// TestTooFewReplicas: with Replicas and no replica, the write is not
// acknowledged and the proof is refused as unavailable.
func TestTooFewReplicas(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, false)
	rc := &ReplayCache{Client: srv.Client(), Replicas: 1, ReplicaTimeout: 50 * time.Millisecond}
	if _, err := rc.FirstUse(context.Background(), "x", time.Now().Add(time.Minute)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no replica: %v, want ErrUnavailable", err)
	}
	rc.Replicas = 0
	for i, want := range []bool{true, false} {
		if first, err := rc.FirstUse(context.Background(), "y", time.Now().Add(time.Minute)); err != nil || first != want {
			t.Errorf("FirstUse #%d: %v %v, want %v", i, first, err, want)
		}
	}
}
