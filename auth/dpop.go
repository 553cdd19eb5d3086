package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Token types (the token_type of a token response, Token.TokenType).
const (
	// TokenTypeBearer is a bearer token (RFC 6750), sent as
	// "Authorization: Bearer".
	TokenTypeBearer = "Bearer"
	// TokenTypeDPoP is a DPoP-bound token (RFC 9449), sent as
	// "Authorization: DPoP" with a DPoP proof signed by the key it is
	// bound to.
	TokenTypeDPoP = "DPoP"
)

// maxDPoPNonce bounds a DPoP-Nonce header value the Transport keeps.
const maxDPoPNonce = 1024

// DPoPOptions turn on DPoP (RFC 9449, OAuth 2.0 Demonstrating Proof of
// Possession) for a Transport (Options.DPoP): every token request and
// every request to the MCP server carries a DPoP proof signed with Key,
// and tokens of type DPoP are bound to Key's public key.
type DPoPOptions struct {
	// Key signs the DPoP proofs: an *ecdsa.PrivateKey (P-256, P-384,
	// P-521), an *rsa.PrivateKey (2048 bits at least) or an
	// ed25519.PrivateKey. Nil means a new P-256 key for the Transport's
	// lifetime; the tokens bound to it are then of no use to another
	// Transport (a token in a FileTokenStore is not used after a restart,
	// a new one is obtained). Set it to a stored key to keep DPoP-bound
	// tokens across runs.
	Key crypto.Signer
	// SigningAlgorithm is the JWS algorithm of the proofs, as for
	// ClientCredentials.SigningAlgorithm. Empty means ES256/ES384/ES512
	// for an ECDSA key (by curve), RS256 for RSA and EdDSA for Ed25519.
	SigningAlgorithm string
}

// dpopKey signs the DPoP proofs of a Transport.
type dpopKey struct {
	alg    jose.SignatureAlgorithm
	signer jose.Signer
	// jkt is the JWK SHA-256 thumbprint (RFC 7638) of the public key,
	// base64url: what DPoP-bound tokens are bound to.
	jkt string
}

func newDPoPKey(o *DPoPOptions) (*dpopKey, error) {
	key := o.Key
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("generating the DPoP key: %w", err)
		}
		key = k
	}
	alg, err := signingAlgorithm(key, o.SigningAlgorithm)
	if err != nil {
		return nil, err
	}
	// EmbedJWK puts the public key (never the private one) in the jwk
	// header, as RFC 9449 section 4.2 requires.
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		return nil, fmt.Errorf("DPoP signer: %w", err)
	}
	sum, err := (&jose.JSONWebKey{Key: key.Public()}).Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("DPoP key thumbprint: %w", err)
	}
	return &dpopKey{alg: alg, signer: signer, jkt: base64.RawURLEncoding.EncodeToString(sum)}, nil
}

// dpopClaims are the claims of a DPoP proof (RFC 9449 section 4.2).
type dpopClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// proof signs a fresh DPoP proof for a method request to u: htu is u
// without query and fragment, ath the hash of accessToken when one is
// presented (resource requests), nonce the server's when known.
func (k *dpopKey) proof(method string, u *url.URL, accessToken, nonce string, now time.Time) (string, error) {
	c := dpopClaims{JTI: randomString(16), HTM: method, HTU: dpopHTU(u), IAT: now.Unix(), Nonce: nonce}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		c.ATH = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	s, err := jwt.Signed(k.signer).Claims(c).Serialize()
	if err != nil {
		return "", fmt.Errorf("auth: signing the DPoP proof: %w", err)
	}
	return s, nil
}

// dpopHTU is the htu claim for a request to u: the target URI without
// query, fragment and userinfo (RFC 9449 section 4.2).
func dpopHTU(u *url.URL) string {
	c := url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	return c.String()
}

// nonceKey is the origin of u: DPoP nonces are remembered per server.
func nonceKey(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(hostPort(u))
}

// dpopNonce returns the latest DPoP nonce of the server at u, "" if none.
func (t *Transport) dpopNonce(u *url.URL) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nonces[nonceKey(u)]
}

// noteDPoPNonce remembers the DPoP-Nonce of a response from the server
// at u (RFC 9449 sections 8 and 9: the latest one replaces the last).
// A value that is not a valid nonce is ignored.
func (t *Transport) noteDPoPNonce(u *url.URL, h http.Header) {
	n := h.Get("DPoP-Nonce")
	if n == "" || !validNonce(n) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nonces[nonceKey(u)] = n
}

// validNonce reports whether s is a nonce (RFC 9449 section 8.1:
// 1*NQCHAR, no quote or backslash), bounded.
func validNonce(s string) bool {
	if s == "" || len(s) > maxDPoPNonce {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// isUseDPoPNonce reports whether an error response body is the
// use_dpop_nonce error (RFC 9449 section 8).
func isUseDPoPNonce(body []byte) bool {
	var r struct {
		Error string `json:"error"`
	}
	return decodeObject(body, &r) == nil && r.Error == "use_dpop_nonce"
}

// checkDPoPAlgorithm fails with ErrDPoPUnsupported when asm lists
// dpop_signing_alg_values_supported without the Transport's algorithm.
func (t *Transport) checkDPoPAlgorithm(asm *AuthorizationServerMetadata) error {
	if t.dpop == nil {
		return nil
	}
	if sup := asm.DPoPSigningAlgValuesSupported; len(sup) > 0 && !slices.Contains(sup, string(t.dpop.alg)) {
		return fmt.Errorf("%w: %s lists dpop_signing_alg_values_supported %q, not %s", ErrDPoPUnsupported, asm.Issuer, sup, t.dpop.alg)
	}
	return nil
}

// usable reports whether the Transport can present tok: a bearer token
// always, a DPoP-bound one only with DPoP on and the key it is bound to.
func (t *Transport) usable(tok *Token) bool {
	if !strings.EqualFold(tok.TokenType, TokenTypeDPoP) {
		return true
	}
	return t.dpop != nil && tok.DPoPKeyThumbprint == t.dpop.jkt
}

// setAuthorization puts tok on the request r to the MCP server: Bearer,
// or DPoP with a fresh proof (with the server's latest nonce).
func (t *Transport) setAuthorization(r *http.Request, tok *Token) error {
	if !strings.EqualFold(tok.TokenType, TokenTypeDPoP) {
		r.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		return nil
	}
	if t.dpop == nil {
		return errors.New("auth: a DPoP-bound token needs Options.DPoP")
	}
	p, err := t.dpop.proof(r.Method, r.URL, tok.AccessToken, t.dpopNonce(r.URL), t.now())
	if err != nil {
		return err
	}
	r.Header.Set("Authorization", "DPoP "+tok.AccessToken)
	r.Header.Set("DPoP", p)
	return nil
}
