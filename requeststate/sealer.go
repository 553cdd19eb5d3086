package requeststate

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"math"
	"time"
	"unsafe"
)

// Claims are what a sealed state carries. The handler's plaintext state
// is State; everything else binds it. Inside the codec the claims are a
// compact binary envelope (version 1, see appendClaims): no JSON escaping
// of the state, so a state costs its own length plus a fixed overhead.
type Claims struct {
	V         int
	IssuedAt  int64 // Unix milliseconds
	ExpiresAt int64 // Unix milliseconds
	Method    string
	Target    string
	Args      [16]byte // digest of the canonical arguments
	Audience  string
	Principal []byte // salt[8] || tag[16], or nil
	State     string
}

// Binding is what a state is bound to: the request that carried it.
type Binding struct {
	// Method is tools/call, prompts/get or resources/read.
	Method string
	// Target is the tool or prompt name, or the resource URI.
	Target string
	// Arguments is the raw JSON of the request's arguments (nil, null
	// and {} are equal).
	Arguments []byte
	// Principal identifies who is authenticated, empty when nobody is.
	Principal string
}

// Sealer seals plaintext state with its binding and opens it again.
type Sealer struct {
	Codec Codec
	// TTL bounds each round (every outbound round is sealed anew).
	TTL time.Duration
	// Audience, when set, must match on open.
	Audience string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// MaxTokenBytes bounds an incoming token before any decoding;
	// zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
}

// MaxFutureSkew is how far in the future an issued-at may lie.
const MaxFutureSkew = 60 * time.Second

const principalLabel = "mcp/request-state/principal:"

func (s *Sealer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// principalTag is salt[8] || SHA-256(label || salt || principal)[:16];
// a fresh salt per seal keeps the tags of one principal unlinkable.
func principalTag(tag *[24]byte, principal string) {
	var small [128]byte
	in := append(append(append(small[:0], principalLabel...), tag[:8]...), principal...)
	sum := sha256.Sum256(in)
	copy(tag[8:], sum[:16])
}

func principalMatches(tag []byte, principal string) bool {
	if len(tag) != 24 {
		return false
	}
	var want [24]byte
	copy(want[:8], tag)
	principalTag(&want, principal)
	return subtle.ConstantTimeCompare(want[:], tag) == 1
}

// Seal binds state to b and seals it with a fresh issued-at and expiry.
func (s *Sealer) Seal(b Binding, state string) (string, error) {
	if s.Codec == nil {
		return "", errors.New("requeststate: Sealer without a codec")
	}
	if s.TTL <= 0 {
		return "", errors.New("requeststate: TTL must be positive")
	}
	args, err := argumentsDigest(b.Arguments)
	if err != nil {
		return "", err
	}
	now := s.now()
	c := Claims{
		V: 1, IssuedAt: now.UnixMilli(), ExpiresAt: now.Add(s.TTL).UnixMilli(),
		Method: b.Method, Target: b.Target, Args: args, State: state, Audience: s.Audience,
	}
	// One read of randomness: the ring's nonce and the principal's salt.
	var rnd [nonceLen + 8]byte
	ring, _ := s.Codec.(*KeyRing)
	if ring != nil || b.Principal != "" {
		if _, err := rand.Read(rnd[:]); err != nil {
			return "", err
		}
	}
	var tag [24]byte
	if b.Principal != "" {
		copy(tag[:8], rnd[nonceLen:])
		principalTag(&tag, b.Principal)
		c.Principal = tag[:]
	}
	// The claims go to a scratch buffer; the built-in ring seals them in
	// place behind room for its header.
	buf := getBuf(headerLen + claimsSize(&c) + tagLen)
	p := (*buf)[:0]
	if ring != nil {
		p = append(p, zeroHeader[:]...)
	}
	p = appendClaims(p, &c)
	var tok string
	if ring != nil {
		tok = ring.sealRaw(p, rnd[:nonceLen])
	} else {
		tok, err = s.Codec.Seal(p)
		// The plaintext claims must not linger in a pooled buffer (the
		// ring's path overwrote them with the ciphertext).
		clear(p)
	}
	putBuf(buf, p)
	return tok, err
}

// claimsSize bounds the length of c's envelope.
func claimsSize(c *Claims) int {
	return 64 + len(c.Method) + len(c.Target) + len(c.Audience) + len(c.Principal) + len(c.State)
}

var methodCodes = [...]string{1: "tools/call", 2: "prompts/get", 3: "resources/read"}

// appendClaims writes the binary envelope, version 1:
//
//	version byte (1)
//	uvarint issued-at (Unix ms) | uvarint lifetime (ms)
//	method: one byte code (1 tools/call, 2 prompts/get, 3 resources/read),
//	        or 0 followed by uvarint length and the name
//	uvarint length + target
//	16 bytes argument digest
//	uvarint length + audience
//	one byte principal length (0 or 24) + principal tag
//	the rest: the plaintext state
func appendClaims(b []byte, c *Claims) []byte {
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(c.IssuedAt))
	b = binary.AppendUvarint(b, uint64(c.ExpiresAt-c.IssuedAt))
	code := byte(0)
	for i, m := range methodCodes {
		if i > 0 && m == c.Method {
			code = byte(i)
		}
	}
	b = append(b, code)
	if code == 0 {
		b = appendBytes(b, c.Method)
	}
	b = appendBytes(b, c.Target)
	b = append(b, c.Args[:]...)
	b = appendBytes(b, c.Audience)
	b = append(b, byte(len(c.Principal)))
	b = append(b, c.Principal...)
	return append(b, c.State...)
}

func appendBytes(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Open unseals token and verifies it against b, in this order: size,
// codec, claims shape, issued-at not more than MaxFutureSkew ahead, not
// expired, same method, target and arguments, audience, principal. It
// returns the plaintext state, or an error matching ErrInvalid whose
// reason is for logs only. A codec error that does not match ErrInvalid
// is rejected too (deny on any error). The handler's state is c.State.
func (s *Sealer) Open(token string, b Binding) (c Claims, err error) {
	max := s.MaxTokenBytes
	if max <= 0 {
		max = DefaultMaxTokenBytes
	}
	if len(token) > max {
		return Claims{}, invalid("malformed: too long")
	}
	if s.Codec == nil {
		return Claims{}, invalid("no codec")
	}
	ring, _ := s.Codec.(*KeyRing)
	payload, err := s.Codec.Unseal(token)
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			return Claims{}, ie
		}
		return Claims{}, invalid("codec: " + err.Error())
	}
	// The ring's output is new and ours: the claims' strings may share
	// it. Another codec's output is copied.
	if err := decodeClaims(payload, &c, ring != nil); err != nil {
		return Claims{}, err
	}
	now := s.now().UnixMilli()
	if !(c.IssuedAt <= now+MaxFutureSkew.Milliseconds()) {
		return Claims{}, invalid("issued in the future")
	}
	if !(now < c.ExpiresAt) {
		return Claims{}, invalid("expired")
	}
	if c.Method != b.Method {
		return Claims{}, invalid("method mismatch")
	}
	if c.Target != b.Target {
		return Claims{}, invalid("target mismatch")
	}
	args, err := argumentsDigest(b.Arguments)
	if err != nil || subtle.ConstantTimeCompare(args[:], c.Args[:]) != 1 {
		return Claims{}, invalid("arguments mismatch")
	}
	if c.Audience != s.Audience {
		return Claims{}, invalid("audience mismatch")
	}
	switch {
	case c.Principal == nil && b.Principal == "":
	case c.Principal == nil || b.Principal == "":
		return Claims{}, invalid("principal presence mismatch")
	case !principalMatches(c.Principal, b.Principal):
		return Claims{}, invalid("principal mismatch")
	}
	return c, nil
}

// decodeClaims decodes the binary envelope strictly: version 1, every
// length within the payload, a principal of 0 or 24 bytes.
func decodeClaims(p []byte, c *Claims, share bool) error {
	if len(p) == 0 || p[0] != 1 {
		return invalid("claims: unsupported version")
	}
	c.V = 1
	p = p[1:]
	iat, n := binary.Uvarint(p)
	if n <= 0 || iat > math.MaxInt64/2 {
		return errMalformedClaims()
	}
	p = p[n:]
	life, n := binary.Uvarint(p)
	if n <= 0 || life > math.MaxInt64/2 {
		return errMalformedClaims()
	}
	p = p[n:]
	c.IssuedAt, c.ExpiresAt = int64(iat), int64(iat)+int64(life)
	if len(p) == 0 {
		return errMalformedClaims()
	}
	code := p[0]
	p = p[1:]
	var ok bool
	switch {
	case code == 0:
		if c.Method, p, ok = readBytes(p, share); !ok {
			return errMalformedClaims()
		}
	case int(code) < len(methodCodes):
		c.Method = methodCodes[code]
	default:
		return errMalformedClaims()
	}
	if c.Target, p, ok = readBytes(p, share); !ok || len(p) < len(c.Args) {
		return errMalformedClaims()
	}
	copy(c.Args[:], p)
	p = p[len(c.Args):]
	if c.Audience, p, ok = readBytes(p, share); !ok || len(p) == 0 {
		return errMalformedClaims()
	}
	pl := int(p[0])
	p = p[1:]
	if (pl != 0 && pl != 24) || len(p) < pl {
		return errMalformedClaims()
	}
	c.Principal = nil
	if pl > 0 {
		c.Principal = p[:pl:pl]
	}
	c.State = toString(p[pl:], share)
	return nil
}

func errMalformedClaims() error { return invalid("claims: malformed") }

func readBytes(p []byte, share bool) (string, []byte, bool) {
	l, n := binary.Uvarint(p)
	if n <= 0 || l > uint64(len(p)-n) {
		return "", p, false
	}
	return toString(p[n:n+int(l)], share), p[n+int(l):], true
}

// toString copies b, or shares its bytes when the caller owns b and
// never writes it again.
func toString(b []byte, share bool) string {
	if !share || len(b) == 0 {
		return string(b)
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
