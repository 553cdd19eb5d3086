package main

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// envelopeCodec is a bring-your-own requeststate.Codec in the style of
// envelope encryption: a data key is unwrapped once at start (one call to
// the KMS), and every token after that is local AES-256-GCM. Expiry and
// bindings are not its job: the SDK puts them inside the payload.
type envelopeCodec struct {
	aead cipher.AEAD
}

// prefix versions the format; it is fed to GCM as additional data, so it
// is bound under the tag.
const prefix = "kms1."

func newEnvelopeCodec(dataKey []byte) (*envelopeCodec, error) {
	block, err := aes.NewCipher(dataKey)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &envelopeCodec{aead: aead}, nil
}

func (c *envelopeCodec) Seal(payload []byte) (string, error) {
	nonce := make([]byte, c.aead.NonceSize(), c.aead.NonceSize()+len(payload)+c.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(c.aead.Seal(nonce, nonce, payload, []byte(prefix))), nil
}

func (c *envelopeCodec) Unseal(token string) ([]byte, error) {
	body, ok := strings.CutPrefix(token, prefix)
	if !ok {
		return nil, &requeststate.InvalidError{Reason: "unknown token format"}
	}
	raw, err := hex.DecodeString(body)
	// Only the exact string Seal produced verifies: lower-case hex only.
	if err != nil || hex.EncodeToString(raw) != body || len(raw) < c.aead.NonceSize()+c.aead.Overhead() {
		return nil, &requeststate.InvalidError{Reason: "malformed token"}
	}
	n := c.aead.NonceSize()
	pt, err := c.aead.Open(nil, raw[:n], raw[n:], []byte(prefix))
	if err != nil {
		return nil, &requeststate.InvalidError{Reason: "token failed verification"}
	}
	return pt, nil
}

// kms stands in for a key management service: it holds the key
// encryption key and unwraps data keys.
type kms struct{ kek cipher.AEAD }

func newKMS() *kms {
	kek := make([]byte, 32)
	rand.Read(kek)
	block, _ := aes.NewCipher(kek)
	aead, _ := cipher.NewGCM(block)
	return &kms{kek: aead}
}

// wrapNewDataKey makes a data key and returns it wrapped (what a deploy
// would store next to its config).
func (k *kms) wrapNewDataKey() []byte {
	dk := make([]byte, 32)
	rand.Read(dk)
	nonce := make([]byte, k.kek.NonceSize())
	rand.Read(nonce)
	return k.kek.Seal(nonce, nonce, dk, nil)
}

// unwrap is the one KMS call a server makes at start.
func (k *kms) unwrap(wrapped []byte) ([]byte, error) {
	n := k.kek.NonceSize()
	if len(wrapped) < n {
		return nil, errors.New("wrapped key too short")
	}
	return k.kek.Open(nil, wrapped[:n], wrapped[n:], nil)
}

var _ requeststate.Codec = (*envelopeCodec)(nil)
