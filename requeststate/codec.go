package requeststate

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Codec turns sealed bytes into a token and back. Seal must protect
// integrity (and should protect confidentiality) and return printable
// ASCII (the token travels as a JSON string and may be logged by
// clients) and must not keep payload after it returns (the Sealer reuses
// it); Unseal must return an error matching ErrInvalid for any token it
// did not produce. Expiry,
// bindings and audience are not the codec's job: the Sealer puts them
// inside the payload before Seal and checks them after Unseal.
type Codec interface {
	Seal(payload []byte) (string, error)
	Unseal(token string) ([]byte, error)
}

// ErrInvalid matches every error that rejects a token.
var ErrInvalid = errors.New("requeststate: invalid request state")

// InvalidError rejects a token. Reason is for logs only (malformed,
// unknown key, seal, expired, ...): it never goes on the wire.
type InvalidError struct {
	Reason string
	// KeyID is, for the reason "unknown key" from a KeyRing, the id of
	// the key the token names (as KeyRing.KeyIDs writes ids), so that a
	// log can tell a key rotated out from one never held; "" otherwise.
	// Like Reason, it is for logs only.
	KeyID string
}

func (e *InvalidError) Error() string { return "requeststate: invalid request state: " + e.Reason }

// Is makes InvalidError match ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(reason string) error { return &InvalidError{Reason: reason} }

// Token format v1:
//
//	"v1." || base64url-nopad( kid[4] || nonce[12] || AES-256-GCM(payload) || tag[16] )
//
// with AAD "v1." || kid, the AES key derived from the configured key by
// HKDF-SHA256 (no salt, info "mcp/request-state/v1/aes-256-gcm") and kid
// the first 4 bytes of SHA-256("mcp/request-state/v1/kid:" || key). The
// layout and derivation match the Python SDK's, so a mixed fleet sharing
// keys interoperates at the codec level.
const (
	tokenPrefix = "v1."
	hkdfInfo    = "mcp/request-state/v1/aes-256-gcm"
	kidLabel    = "mcp/request-state/v1/kid:"
	kidLen      = 4
	nonceLen    = 12
	tagLen      = 16
	// MinKeyBytes is the minimum length of a configured key.
	MinKeyBytes = 32
	// DefaultMaxTokenBytes bounds a token before any decoding.
	DefaultMaxTokenBytes = 256 << 10
)

type ringKey struct {
	kid  [kidLen]byte
	aad  [len(tokenPrefix) + kidLen]byte // tokenPrefix || kid
	aead cipher.AEAD
}

// KeyRing is the built-in AES-256-GCM codec over a list of keys: the
// first key seals, every key verifies. See the package documentation for
// rotation. SetKeys replaces the list while the ring is in use, so the
// phases of a rotation roll out without a restart (see WatchKeyFile).
type KeyRing struct {
	keys     atomic.Pointer[[]ringKey]
	maxToken int
}

// GenerateKey returns a new random 32-byte key.
func GenerateKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic("requeststate: no randomness: " + err.Error())
	}
	return k
}

// NewKeyRing returns a codec over keys. Each key must be at least 32
// bytes; keys must not repeat; there must be at least one.
func NewKeyRing(keys ...[]byte) (*KeyRing, error) {
	r := &KeyRing{maxToken: DefaultMaxTokenBytes}
	if err := r.SetKeys(keys...); err != nil {
		return nil, err
	}
	return r, nil
}

// SetKeys replaces the ring's keys, with the rules of NewKeyRing; on an
// error the ring keeps the keys it had. Seals and opens in progress
// finish with the list they started with.
func (r *KeyRing) SetKeys(keys ...[]byte) error {
	if len(keys) == 0 {
		return errors.New("requeststate: at least one key is required")
	}
	list := make([]ringKey, 0, len(keys))
	for i, k := range keys {
		if len(k) == 0 {
			return fmt.Errorf("requeststate: key %d is empty", i)
		}
		if len(k) < MinKeyBytes {
			return fmt.Errorf("requeststate: key %d is %d bytes; keys must be at least %d bytes", i, len(k), MinKeyBytes)
		}
		for j := 0; j < i; j++ {
			if bytes.Equal(keys[j], k) {
				return fmt.Errorf("requeststate: key %d repeats key %d", i, j)
			}
		}
		sub, err := hkdf.Key(sha256.New, k, nil, hkdfInfo, 32)
		if err != nil {
			return err
		}
		block, err := aes.NewCipher(sub)
		if err != nil {
			return err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(append([]byte(kidLabel), k...))
		var rk ringKey
		copy(rk.kid[:], sum[:kidLen])
		copy(rk.aad[:], tokenPrefix)
		copy(rk.aad[len(tokenPrefix):], rk.kid[:])
		rk.aead = aead
		list = append(list, rk)
	}
	r.keys.Store(&list)
	return nil
}

// KeyIDs returns the ids of the ring's keys, sealing key first: the
// first 4 bytes of a digest of each key, in hex, which tokens carry and
// logs may show.
func (r *KeyRing) KeyIDs() []string {
	list := *r.keys.Load()
	ids := make([]string, len(list))
	for i := range list {
		ids[i] = hex.EncodeToString(list[i].kid[:])
	}
	return ids
}

// headerLen is the kid and nonce in front of the ciphertext.
const headerLen = kidLen + nonceLen

// Seal encrypts payload with the first key.
func (r *KeyRing) Seal(payload []byte) (string, error) {
	buf := getBuf(headerLen + len(payload) + tagLen)
	raw := append(append((*buf)[:0], zeroHeader[:]...), payload...)
	var nonce [nonceLen]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		putBuf(buf, raw)
		return "", err
	}
	tok := r.sealRaw(raw, nonce[:])
	putBuf(buf, raw)
	return tok, nil
}

var zeroHeader [headerLen]byte

// sealRaw seals raw[headerLen:] in place (raw's capacity should hold the
// tag too) under a fresh random nonce and returns the token.
func (r *KeyRing) sealRaw(raw, nonce []byte) string {
	k := &(*r.keys.Load())[0]
	copy(raw, k.kid[:])
	copy(raw[kidLen:headerLen], nonce)
	// The ciphertext overwrites the plaintext exactly, as cipher.AEAD
	// allows.
	raw = k.aead.Seal(raw[:headerLen], raw[kidLen:headerLen], raw[headerLen:], k.aad[:])
	out := make([]byte, len(tokenPrefix)+b64EncodedLen(len(raw)))
	copy(out, tokenPrefix)
	b64Encode(out[len(tokenPrefix):], raw)
	// out is never written again: the string shares its bytes.
	return unsafe.String(unsafe.SliceData(out), len(out))
}

// Unseal verifies and decrypts a token sealed by any key of the ring.
// Decoding is strict: only the exact string Seal produced verifies. The
// returned bytes are new and the caller's.
func (r *KeyRing) Unseal(token string) ([]byte, error) {
	if len(token) > r.maxToken {
		return nil, invalid("malformed: too long")
	}
	if len(token) <= len(tokenPrefix) || token[:len(tokenPrefix)] != tokenPrefix {
		return nil, invalid("malformed: prefix")
	}
	body := token[len(tokenPrefix):]
	n := b64DecodedLen(len(body))
	if n < 0 {
		return nil, invalid("malformed: base64url length")
	}
	if n < headerLen+tagLen {
		return nil, invalid("malformed: too short")
	}
	raw := make([]byte, n)
	if _, ok := b64Decode(raw, body); !ok {
		return nil, invalid("malformed: base64url")
	}
	found := false
	list := *r.keys.Load()
	for i := range list {
		k := &list[i]
		if !bytes.Equal(k.kid[:], raw[:kidLen]) {
			continue
		}
		found = true
		// Decrypt in place: raw is ours and not needed afterwards.
		ct := raw[headerLen:]
		pt, err := k.aead.Open(ct[:0], raw[kidLen:headerLen], ct, k.aad[:])
		if err == nil {
			return pt, nil
		}
	}
	if !found {
		return nil, &InvalidError{Reason: "unknown key", KeyID: hex.EncodeToString(raw[:kidLen])}
	}
	return nil, invalid("seal")
}

// Scratch buffers for sealing: a 1 KiB state would otherwise cost two
// more allocations of its size per seal.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// maxPooled keeps a rare huge state from pinning its buffer.
const maxPooled = 64 << 10

func getBuf(n int) *[]byte {
	b := bufPool.Get().(*[]byte)
	if cap(*b) < n {
		*b = make([]byte, 0, n)
	}
	return b
}

// putBuf returns b to the pool; used is what b's bytes became (it may
// have been reallocated by append).
func putBuf(b *[]byte, used []byte) {
	if cap(used) > cap(*b) {
		*b = used
	}
	if cap(*b) <= maxPooled {
		*b = (*b)[:0]
		bufPool.Put(b)
	}
}

// ParseKeys reads a key list as operators write it (a flag or an
// environment variable such as ROUNDTRIP_STATE_KEYS): comma-separated
// base64url keys, padding optional, blanks ignored; the first seals, all
// verify. It does not check lengths or repeats: NewKeyRing does.
func ParseKeys(list string) ([][]byte, error) {
	var keys [][]byte
	for _, k := range strings.Split(list, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(k, "="))
		if err != nil {
			return nil, fmt.Errorf("requeststate: key %q is not base64url: %w", k, err)
		}
		keys = append(keys, b)
	}
	return keys, nil
}
