package auth

import (
	"context"
	"sync"
	"time"
)

// Token is an OAuth access token with what is needed to use and refresh
// it.
type Token struct {
	// AccessToken is sent as "Authorization: Bearer AccessToken", or
	// "Authorization: DPoP AccessToken" for a DPoP-bound token.
	AccessToken string `json:"access_token"`
	// TokenType is the token_type of the token response: TokenTypeBearer,
	// or TokenTypeDPoP (only with Options.DPoP).
	TokenType string `json:"token_type,omitempty"`
	// RefreshToken, if any, obtains a new access token without the user.
	RefreshToken string `json:"refresh_token,omitempty"`
	// Expiry is when the access token expires; zero means unknown.
	Expiry time.Time `json:"expiry,omitzero"`
	// Scope is the space-separated scope granted (or, when the token
	// response omits it, requested).
	Scope string `json:"scope,omitempty"`
	// Issuer is the authorization server that issued the token.
	Issuer string `json:"issuer,omitempty"`
	// Resource is the resource indicator the token was requested for.
	Resource string `json:"resource,omitempty"`
	// ClientID is the client the token was issued to.
	ClientID string `json:"client_id,omitempty"`
	// DPoPKeyThumbprint, for a DPoP-bound token, is the JWK SHA-256
	// thumbprint (RFC 7638, base64url) of the key it is bound to: a
	// Transport presents the token only when its DPoP key is that one.
	DPoPKeyThumbprint string `json:"dpop_jkt,omitempty"`
}

// expired reports whether the token is known to expire within skew.
func (t *Token) expired(now time.Time, skew time.Duration) bool {
	return !t.Expiry.IsZero() && now.Add(skew).After(t.Expiry)
}

// TokenStore keeps tokens between requests (and, for a persistent
// implementation, between runs). Keys are MCP server URLs (scheme, host
// and path). Implementations must be safe for concurrent use.
type TokenStore interface {
	// Load returns the token stored under key, or nil (and a nil error)
	// when there is none.
	Load(ctx context.Context, key string) (*Token, error)
	// Save stores tok under key, replacing any previous token.
	Save(ctx context.Context, key string, tok *Token) error
	// Delete removes the token stored under key, if any.
	Delete(ctx context.Context, key string) error
}

// MemoryTokenStore is a TokenStore in memory, the default. Its zero
// value is ready to use.
type MemoryTokenStore struct {
	mu     sync.Mutex
	tokens map[string]Token
}

// Load implements TokenStore.
func (s *MemoryTokenStore) Load(_ context.Context, key string) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[key]
	if !ok {
		return nil, nil
	}
	return &t, nil
}

// Save implements TokenStore.
func (s *MemoryTokenStore) Save(_ context.Context, key string, tok *Token) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]Token{}
	}
	s.tokens[key] = *tok
	return nil
}

// Delete implements TokenStore.
func (s *MemoryTokenStore) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, key)
	return nil
}

// ClientStore keeps the client registrations a Transport obtains by
// dynamic client registration, so that after a restart it can use a
// stored refresh token (which only the client it was issued to may use)
// and authorize again without registering again. Registrations are keyed
// by the authorization server's issuer and the redirect URI they were
// registered with. Implementations must be safe for concurrent use.
// FileTokenStore is one.
type ClientStore interface {
	// LoadClient returns the client registered at issuer with
	// redirectURL, or nil (and a nil error) when there is none.
	LoadClient(ctx context.Context, issuer, redirectURL string) (*ClientCredentials, error)
	// SaveClient stores c as the client registered at issuer with
	// redirectURL, replacing any previous one.
	SaveClient(ctx context.Context, issuer, redirectURL string, c *ClientCredentials) error
}
