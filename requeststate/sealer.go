package requeststate

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strconv"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Claims are what a sealed state carries (envelope version 1). The
// handler's plaintext state is S; everything else binds it.
type Claims struct {
	V         int    `json:"v"`
	IssuedAt  int64  `json:"iat"` // Unix milliseconds
	ExpiresAt int64  `json:"exp"` // Unix milliseconds
	Method    string `json:"m"`
	Target    string `json:"t"`
	Args      string `json:"a"`
	State     string `json:"s"`
	Audience  string `json:"aud,omitempty"`
	Principal string `json:"p,omitempty"`
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

// principalTag is salt8 || SHA-256(label || salt || principal)[:16],
// base64url; a fresh salt per seal keeps tags of one principal unlinkable.
func principalTag(principal string, salt []byte) string {
	h := sha256.New()
	h.Write([]byte(principalLabel))
	h.Write(salt)
	h.Write([]byte(principal))
	sum := h.Sum(nil)
	out := make([]byte, 0, 24)
	out = append(out, salt...)
	out = append(out, sum[:16]...)
	return base64.RawURLEncoding.EncodeToString(out)
}

func principalMatches(tag, principal string) bool {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(tag)
	if err != nil || len(raw) != 24 {
		return false
	}
	want := principalTag(principal, raw[:8])
	return subtle.ConstantTimeCompare([]byte(want), []byte(tag)) == 1
}

// Seal binds state to b and seals it with a fresh issued-at and expiry.
func (s *Sealer) Seal(b Binding, state string) (string, error) {
	if s.Codec == nil {
		return "", errors.New("requeststate: Sealer without a codec")
	}
	if s.TTL <= 0 {
		return "", errors.New("requeststate: TTL must be positive")
	}
	args, err := ArgumentsDigest(b.Arguments)
	if err != nil {
		return "", err
	}
	now := s.now()
	c := Claims{
		V: 1, IssuedAt: now.UnixMilli(), ExpiresAt: now.Add(s.TTL).UnixMilli(),
		Method: b.Method, Target: b.Target, Args: args, State: state, Audience: s.Audience,
	}
	if b.Principal != "" {
		salt := make([]byte, 8)
		if _, err := rand.Read(salt); err != nil {
			return "", err
		}
		c.Principal = principalTag(b.Principal, salt)
	}
	return s.Codec.Seal(appendClaims(make([]byte, 0, 160+len(state)), &c))
}

// appendClaims writes the envelope with the member order of Claims.
func appendClaims(b []byte, c *Claims) []byte {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(c.V), 10)
	b = append(b, `,"iat":`...)
	b = strconv.AppendInt(b, c.IssuedAt, 10)
	b = append(b, `,"exp":`...)
	b = strconv.AppendInt(b, c.ExpiresAt, 10)
	b = append(b, `,"m":`...)
	b = jsonrpc.AppendString(b, c.Method)
	b = append(b, `,"t":`...)
	b = jsonrpc.AppendString(b, c.Target)
	b = append(b, `,"a":`...)
	b = jsonrpc.AppendString(b, c.Args)
	b = append(b, `,"s":`...)
	b = jsonrpc.AppendString(b, c.State)
	if c.Audience != "" {
		b = append(b, `,"aud":`...)
		b = jsonrpc.AppendString(b, c.Audience)
	}
	if c.Principal != "" {
		b = append(b, `,"p":`...)
		b = jsonrpc.AppendString(b, c.Principal)
	}
	return append(b, '}')
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
	payload, err := s.Codec.Unseal(token)
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			return Claims{}, ie
		}
		return Claims{}, invalid("codec: " + err.Error())
	}
	if err := decodeClaims(payload, &c); err != nil {
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
	args, err := ArgumentsDigest(b.Arguments)
	if err != nil || subtle.ConstantTimeCompare([]byte(args), []byte(c.Args)) != 1 {
		return Claims{}, invalid("arguments mismatch")
	}
	if c.Audience != s.Audience {
		return Claims{}, invalid("audience mismatch")
	}
	switch {
	case c.Principal == "" && b.Principal == "":
	case c.Principal == "" || b.Principal == "":
		return Claims{}, invalid("principal presence mismatch")
	case !principalMatches(c.Principal, b.Principal):
		return Claims{}, invalid("principal mismatch")
	}
	return c, nil
}

// decodeClaims decodes the envelope strictly in one pass: version 1,
// exact member names, no unknown or repeated member, every required
// member present with the right type.
func decodeClaims(payload []byte, c *Claims) error {
	// The codec guarantees the payload is one Seal produced, so it is not
	// validated as JSON again; the scanner is safe on any input anyway.
	if jsonrpc.KindOf(payload) != jsonrpc.KindObject {
		return invalid("claims: not an object")
	}
	const required = 1<<7 - 1
	var seen int
	var bad error
	_ = jsonrpc.Fields(payload, func(k, v []byte) error {
		i := -1
		for j, n := range claimNames {
			if string(k) == n {
				i = j
			}
		}
		if i < 0 || seen&(1<<i) != 0 {
			bad = invalid("claims: unknown or repeated member")
			return bad
		}
		seen |= 1 << i
		var ok bool
		switch i {
		case 0:
			var v1 int64
			v1, ok = intValue(v)
			c.V = int(v1)
		case 1:
			c.IssuedAt, ok = intValue(v)
		case 2:
			c.ExpiresAt, ok = intValue(v)
		case 3:
			c.Method, ok = jsonrpc.String(v)
		case 4:
			c.Target, ok = jsonrpc.String(v)
		case 5:
			c.Args, ok = jsonrpc.String(v)
		case 6:
			c.State, ok = jsonrpc.String(v)
		case 7:
			c.Audience, ok = jsonrpc.String(v)
		case 8:
			c.Principal, ok = jsonrpc.String(v)
		}
		if !ok {
			bad = invalid("claims: member " + claimNames[i] + " has the wrong type")
			return bad
		}
		return nil
	})
	if bad != nil {
		return bad
	}
	if seen&required != required {
		return invalid("claims: missing member")
	}
	if c.V != 1 {
		return invalid("claims: unsupported version")
	}
	return nil
}

var claimNames = [...]string{"v", "iat", "exp", "m", "t", "a", "s", "aud", "p"}

func intValue(v []byte) (int64, bool) {
	n, err := strconv.ParseInt(string(jsonrpc.TrimSpace(v)), 10, 64)
	return n, err == nil
}
