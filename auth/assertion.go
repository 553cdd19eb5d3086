package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// ClientAssertionType is the client_assertion_type of private_key_jwt
// client authentication (RFC 7523 section 2.2).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// clientAssertionLifetime is how long a client assertion is valid: it is
// made for one token request, sent at once.
const clientAssertionLifetime = time.Minute

// maxPrivateKeyPEM bounds the input of ParsePrivateKey.
const maxPrivateKeyPEM = 64 << 10

// signingAlgorithm returns the JWS algorithm to sign with key: alg when
// given (it must suit the key), else ES256/ES384/ES512 by curve for an
// ECDSA key, RS256 for RSA, EdDSA for Ed25519. Symmetric and "none"
// algorithms are refused.
func signingAlgorithm(key crypto.Signer, alg string) (jose.SignatureAlgorithm, error) {
	var allowed []jose.SignatureAlgorithm
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			allowed = []jose.SignatureAlgorithm{jose.ES256}
		case elliptic.P384():
			allowed = []jose.SignatureAlgorithm{jose.ES384}
		case elliptic.P521():
			allowed = []jose.SignatureAlgorithm{jose.ES512}
		default:
			return "", errors.New("unsupported ECDSA curve")
		}
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return "", fmt.Errorf("RSA key of %d bits is too short (2048 at least)", k.N.BitLen())
		}
		allowed = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512}
	case ed25519.PrivateKey:
		if len(k) != ed25519.PrivateKeySize {
			return "", errors.New("malformed Ed25519 key")
		}
		allowed = []jose.SignatureAlgorithm{jose.EdDSA}
	case nil:
		return "", errors.New("no private key")
	default:
		return "", fmt.Errorf("unsupported private key type %T (want *ecdsa.PrivateKey, *rsa.PrivateKey or ed25519.PrivateKey)", key)
	}
	if alg == "" {
		return allowed[0], nil
	}
	if !slices.Contains(allowed, jose.SignatureAlgorithm(alg)) {
		return "", fmt.Errorf("algorithm %q does not suit a %T (use one of %q)", alg, key, allowed)
	}
	return jose.SignatureAlgorithm(alg), nil
}

// clientAssertion signs the private_key_jwt assertion of client c for
// the authorization server issuer (RFC 7523 section 3): iss and sub are
// the client_id, aud is the issuer identifier, with a short expiry and a
// fresh jti so that each token request has its own.
func clientAssertion(c *ClientCredentials, issuer string, now time.Time) (string, error) {
	alg, err := signingAlgorithm(c.PrivateKey, c.SigningAlgorithm)
	if err != nil {
		return "", err
	}
	opts := &jose.SignerOptions{}
	if c.KeyID != "" {
		opts = opts.WithHeader(jose.HeaderKey("kid"), c.KeyID)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: c.PrivateKey}, opts.WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("client assertion signer: %w", err)
	}
	claims := jwt.Claims{
		Issuer:    c.ClientID,
		Subject:   c.ClientID,
		Audience:  jwt.Audience{issuer},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(clientAssertionLifetime)),
		ID:        randomString(16),
	}
	s, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return s, nil
}

// ParsePrivateKey parses a PEM-encoded private key for private_key_jwt
// client authentication (ClientCredentials.PrivateKey): a PKCS #8
// "PRIVATE KEY" block (ECDSA, RSA or Ed25519), a PKCS #1 "RSA PRIVATE
// KEY" block or a SEC 1 "EC PRIVATE KEY" block. The first PEM block is
// used; encrypted keys are not supported.
func ParsePrivateKey(pemBytes []byte) (crypto.Signer, error) {
	if len(pemBytes) > maxPrivateKeyPEM {
		return nil, fmt.Errorf("auth: private key: more than %d bytes", maxPrivateKeyPEM)
	}
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("auth: private key: no PEM block")
	}
	if _, ok := block.Headers["Proc-Type"]; ok {
		return nil, errors.New("auth: private key: encrypted PEM is not supported")
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("auth: private key: unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("auth: private key: %w", err)
	}
	s, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("auth: private key: %T cannot sign", key)
	}
	if _, err := signingAlgorithm(s, ""); err != nil {
		return nil, fmt.Errorf("auth: private key: %w", err)
	}
	return s, nil
}
