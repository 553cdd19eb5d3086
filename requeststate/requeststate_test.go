package requeststate

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func ring(t testing.TB, keys ...[]byte) *KeyRing {
	t.Helper()
	r, err := NewKeyRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestKeyRingRejectsBadKeys(t *testing.T) {
	cases := map[string][][]byte{
		"none":      nil,
		"empty":     {{}},
		"short":     {make([]byte, 31)},
		"duplicate": {key(1), key(2), key(1)},
	}
	for name, keys := range cases {
		if _, err := NewKeyRing(keys...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewKeyRing(key(1), make([]byte, 64)); err != nil {
		t.Errorf("valid keys rejected: %v", err)
	}
}

func TestTokenFormat(t *testing.T) {
	r := ring(t, key(1))
	tok, err := r.Seal([]byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "v1.") || strings.ContainsAny(tok[3:], "=+/\n") {
		t.Fatalf("token %q", tok)
	}
	// kid 4 + nonce 12 + 5 bytes + tag 16 = 37 bytes = 50 base64url chars.
	if len(tok) != 3+50 {
		t.Errorf("token length %d", len(tok))
	}
	pt, err := r.Unseal(tok)
	if err != nil || string(pt) != "hello" {
		t.Fatalf("%q %v", pt, err)
	}
	tok2, _ := r.Seal([]byte("hello"))
	if tok == tok2 {
		t.Error("two seals of the same payload are equal: nonce reuse")
	}
}

func TestEveryByteOfTheTokenIsProtected(t *testing.T) {
	r := ring(t, key(1))
	tok, _ := r.Seal([]byte(`{"some":"state"}`))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := 0; i < len(tok); i++ {
		for _, c := range []byte{alphabet[(strings.IndexByte(alphabet, tok[i])+1)%64], alphabet[(strings.IndexByte(alphabet, tok[i])+33)%64], '.', 'v'} {
			if c == tok[i] {
				continue
			}
			b := []byte(tok)
			b[i] = c
			if _, err := r.Unseal(string(b)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("byte %d changed to %q still verifies (%v)", i, c, err)
			}
		}
	}
}

func TestTruncatedPaddedAndNonCanonicalTokensAreRejected(t *testing.T) {
	r := ring(t, key(1))
	tok, _ := r.Seal([]byte("state"))
	for n := 0; n < len(tok); n++ {
		if _, err := r.Unseal(tok[:n]); !errors.Is(err, ErrInvalid) {
			t.Fatalf("prefix of %d bytes verifies", n)
		}
	}
	for name, bad := range map[string]string{
		"padding":        tok + "=",
		"double padding": tok + "==",
		"newline":        tok[:10] + "\n" + tok[10:],
		"crlf at end":    tok + "\r\n",
		"space":          tok + " ",
		"empty":          "",
		"prefix only":    "v1.",
		"other version":  "v2." + tok[3:],
		"std alphabet":   strings.NewReplacer("-", "+", "_", "/").Replace(tok),
	} {
		if bad == tok {
			continue
		}
		if _, err := r.Unseal(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: verifies", name)
		}
	}
	// Non-zero trailing bits: the last character encodes bits past the end.
	last := tok[len(tok)-1]
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	idx := strings.IndexByte(alphabet, last)
	for _, c := range []byte(alphabet) {
		if c == last || strings.IndexByte(alphabet, c)&^3 != idx&^3 {
			continue // only characters that differ in the trailing bits
		}
		if _, err := r.Unseal(tok[:len(tok)-1] + string(c)); !errors.Is(err, ErrInvalid) {
			t.Errorf("trailing-bit variant %q verifies", c)
		}
	}
}

func TestUnknownKeyAndRotation(t *testing.T) {
	old, nw := key(1), key(2)
	tokOld, _ := ring(t, old).Seal([]byte("x"))
	if _, err := ring(t, nw).Unseal(tokOld); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("other key: %v", err)
	}
	phase1, phase2, phase3 := ring(t, old, nw), ring(t, nw, old), ring(t, nw)
	tok1, _ := phase1.Seal([]byte("p1"))
	tok2, _ := phase2.Seal([]byte("p2"))
	for name, c := range map[string]*KeyRing{"phase1": phase1, "phase2": phase2} {
		for _, tok := range []string{tokOld, tok1, tok2} {
			if _, err := c.Unseal(tok); err != nil {
				t.Errorf("%s cannot open a state of an earlier or later phase: %v", name, err)
			}
		}
	}
	if _, err := phase3.Unseal(tok2); err != nil {
		t.Errorf("phase 3 rejects a NEW state: %v", err)
	}
	if _, err := phase3.Unseal(tok1); err == nil {
		t.Error("phase 3 still accepts OLD")
	}
}

// ---- sealer ----

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newSealer(t testing.TB, c *clock) *Sealer {
	return &Sealer{Codec: ring(t, key(7)), TTL: time.Minute, Audience: "svc", Now: c.now}
}

var base = Binding{Method: "tools/call", Target: "deploy", Arguments: []byte(`{"env":"prod","n":1}`), Principal: `["client","iss","sub"]`}

func TestSealOpenRoundTrip(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSealer(t, c)
	tok, err := s.Seal(base, "plain state")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tok, "plain") {
		t.Fatal("state is not encrypted")
	}
	cl, err := s.Open(tok, base)
	if err != nil || cl.State != "plain state" || cl.ExpiresAt != c.t.Add(time.Minute).UnixMilli() {
		t.Fatalf("%+v %v", cl, err)
	}
}

func TestEachBindingIsChecked(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSealer(t, c)
	tok, _ := s.Seal(base, "st")
	mut := map[string]func(b *Binding){
		"method":             func(b *Binding) { b.Method = "prompts/get" },
		"target":             func(b *Binding) { b.Target = "destroy" },
		"arguments":          func(b *Binding) { b.Arguments = []byte(`{"env":"dev","n":1}`) },
		"argument type":      func(b *Binding) { b.Arguments = []byte(`{"env":"prod","n":"1"}`) },
		"principal":          func(b *Binding) { b.Principal = `["client","iss","other"]` },
		"principal absent":   func(b *Binding) { b.Principal = "" },
		"extra argument":     func(b *Binding) { b.Arguments = []byte(`{"env":"prod","n":1,"x":0}`) },
		"number spelled 1.0": func(b *Binding) { b.Arguments = []byte(`{"env":"prod","n":1.0}`) },
	}
	for name, m := range mut {
		b := base
		m(&b)
		if _, err := s.Open(tok, b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: accepted", name)
		}
	}
	// A state sealed without a principal is refused when one is present.
	anon := base
	anon.Principal = ""
	tokAnon, _ := s.Seal(anon, "st")
	if _, err := s.Open(tokAnon, base); !errors.Is(err, ErrInvalid) {
		t.Error("anonymous state accepted for an authenticated principal")
	}
	if _, err := s.Open(tokAnon, anon); err != nil {
		t.Errorf("anonymous round trip: %v", err)
	}
	other := *s
	other.Audience = "other-svc"
	if _, err := other.Open(tok, base); !errors.Is(err, ErrInvalid) {
		t.Error("cross-audience accepted")
	}
	noAud := *s
	noAud.Audience = ""
	if _, err := noAud.Open(tok, base); !errors.Is(err, ErrInvalid) {
		t.Error("audience presence not checked")
	}
}

func TestArgumentDigestIsCanonical(t *testing.T) {
	same := [][]string{
		{`{"a":1,"b":[true,null]}`, ` { "b" : [ true , null ] , "a" : 1 } `},
		{``, `null`, `{}`, ` { } `},
		{`{"x":{"q":"é","p":2}}`, `{"x":{"p":2,"q":"é"}}`},
	}
	for _, group := range same {
		want, _ := ArgumentsDigest([]byte(group[0]))
		for _, g := range group[1:] {
			if got, _ := ArgumentsDigest([]byte(g)); got != want {
				t.Errorf("%s and %s digest differently", group[0], g)
			}
		}
	}
	different := [][2]string{
		{`{"s":"\ud800"}`, `{"s":"\udfff"}`},
		{`{"n":12345678901234567890}`, `{"n":12345678901234567891}`},
		{`{"a":[1,2]}`, `{"a":[2,1]}`},
		{`{"a":"1"}`, `{"a":1}`},
	}
	for _, d := range different {
		a, _ := ArgumentsDigest([]byte(d[0]))
		b, _ := ArgumentsDigest([]byte(d[1]))
		if a == b {
			t.Errorf("%s and %s digest alike", d[0], d[1])
		}
	}
}

func TestLoneSurrogateArgumentsDoNotCrossVerify(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSealer(t, c)
	b := base
	b.Arguments = []byte(`{"s":"\ud800"}`)
	tok, err := s.Seal(b, "st")
	if err != nil {
		t.Fatal(err)
	}
	b.Arguments = []byte(`{"s":"\udfff"}`)
	if _, err := s.Open(tok, b); !errors.Is(err, ErrInvalid) {
		t.Error("state for \\ud800 accepted with \\udfff")
	}
}

func TestExpiryAndFutureIssuedAt(t *testing.T) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSealer(t, c)
	tok, _ := s.Seal(base, "st")
	c.t = c.t.Add(time.Minute - time.Millisecond)
	if _, err := s.Open(tok, base); err != nil {
		t.Errorf("inside the TTL: %v", err)
	}
	c.t = c.t.Add(time.Millisecond)
	if _, err := s.Open(tok, base); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("at expiry: %v", err)
	}
	// Sealed by a clock 61 s ahead: issued in the future.
	c.t = time.Unix(1_800_000_061, 0)
	future, _ := s.Seal(base, "st")
	c.t = time.Unix(1_800_000_000, 0)
	if _, err := s.Open(future, base); err == nil || !strings.Contains(err.Error(), "future") {
		t.Errorf("future iat: %v", err)
	}
	c.t = time.Unix(1_800_000_059, 0)
	near, _ := s.Seal(base, "st")
	c.t = time.Unix(1_800_000_000, 0)
	if _, err := s.Open(near, base); err != nil {
		t.Errorf("59 s of skew must pass: %v", err)
	}
}

func TestSealerConfiguration(t *testing.T) {
	if _, err := (&Sealer{Codec: ring(t, key(1))}).Seal(base, "x"); err == nil {
		t.Error("zero TTL accepted")
	}
	if _, err := (&Sealer{Codec: ring(t, key(1)), TTL: -time.Second}).Seal(base, "x"); err == nil {
		t.Error("negative TTL accepted")
	}
	s := &Sealer{Codec: ring(t, key(1)), TTL: time.Minute, MaxTokenBytes: 100}
	tok, _ := s.Seal(base, strings.Repeat("x", 200))
	if _, err := s.Open(tok, base); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("oversized token: %v", err)
	}
}

// A codec that signs nothing: the claims decoder must still refuse
// shapes the sealer never produces.
type plainCodec struct{}

func (plainCodec) Seal(p []byte) (string, error) { return string(p), nil }
func (plainCodec) Unseal(s string) ([]byte, error) {
	if s == "boom" {
		return nil, errors.New("backend down")
	}
	return []byte(s), nil
}

func goodClaims() []byte {
	d, _ := argumentsDigest(nil)
	return appendClaims(nil, &Claims{V: 1, IssuedAt: 1000, ExpiresAt: 2000, Method: "tools/call", Target: "x", Args: d, State: "st"})
}

func TestClaimsShapeIsStrict(t *testing.T) {
	s := &Sealer{Codec: plainCodec{}, TTL: time.Minute, Now: (&clock{time.UnixMilli(1000)}).now}
	good := goodClaims()
	b := Binding{Method: "tools/call", Target: "x"}
	if c, err := s.Open(string(good), b); err != nil || c.State != "st" {
		t.Fatalf("good claims: %+v %v", c, err)
	}
	// Every truncation that cuts into the fixed part is malformed.
	fixed := len(good) - len("st")
	for n := 0; n < fixed; n++ {
		if _, err := s.Open(string(good[:n]), b); !errors.Is(err, ErrInvalid) {
			t.Errorf("truncated to %d bytes: %v", n, err)
		}
	}
	mutate := func(f func(p []byte) []byte) string {
		return string(f(append([]byte(nil), good...)))
	}
	for name, bad := range map[string]string{
		"version 2":        mutate(func(p []byte) []byte { p[0] = 2; return p }),
		"unknown method":   mutate(func(p []byte) []byte { p[3] = 9; return p }),
		"principal length": mutate(func(p []byte) []byte { p[fixed-1] = 5; return p }),
		"codec error":      "boom",
	} {
		if _, err := s.Open(bad, b); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another method is encoded by name and round-trips.
	d, _ := argumentsDigest(nil)
	custom := appendClaims(nil, &Claims{V: 1, IssuedAt: 1000, ExpiresAt: 2000, Method: "x/custom", Target: "x", Args: d})
	if c, err := s.Open(string(custom), Binding{Method: "x/custom", Target: "x"}); err != nil || c.Method != "x/custom" {
		t.Errorf("custom method: %+v %v", c, err)
	}
}

func TestStateCostsItsLengthPlusAFixedOverhead(t *testing.T) {
	s := &Sealer{Codec: ring(t, key(1)), TTL: 10 * time.Minute, Audience: "svc"}
	empty, _ := s.Seal(base, "")
	withState, _ := s.Seal(base, strings.Repeat("\"", 300)) // no escaping inside
	if d := len(withState) - len(empty); d > 300*4/3+2 {
		t.Errorf("300 bytes of state cost %d token bytes", d)
	}
	t.Logf("empty-state token: %d bytes", len(empty))
}

// FuzzOpen feeds arbitrary tokens to Open: no panic, and nothing but a
// token sealed for this binding ever opens.
func FuzzOpen(f *testing.F) {
	c := &clock{time.Unix(1_800_000_000, 0)}
	s := newSealer(f, c)
	good, _ := s.Seal(base, "st")
	for _, seed := range []string{good, good[:20], good + "=", "v1.", "", "v1.AAAA\nAAAA", strings.Repeat("A", 300)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		cl, err := s.Open(tok, base)
		// Only a token this key sealed for this binding may open (the
		// seeds are re-sealed in each fuzz worker, so compare claims).
		if err == nil && (cl.State != "st" || cl.Method != base.Method || cl.Target != base.Target) {
			t.Fatalf("forged token %q opened: %+v", tok, cl)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("error does not match ErrInvalid: %v", err)
		}
	})
}

// ---- benchmarks ----

var state1K = strings.Repeat("abcdefgh", 128)

func BenchmarkSealOpen1KiB(b *testing.B) {
	s := &Sealer{Codec: ring(b, key(1)), TTL: time.Minute, Audience: "svc"}
	b.ReportAllocs()
	for b.Loop() {
		tok, err := s.Seal(base, state1K)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Open(tok, base); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBareAESGCM1KiB is the baseline: seal and open the same bytes
// with AES-256-GCM alone.
func BenchmarkBareAESGCM1KiB(b *testing.B) {
	blk, _ := aes.NewCipher(key(1))
	aead, _ := cipher.NewGCM(blk)
	pt := []byte(state1K)
	nonce := make([]byte, 12)
	b.ReportAllocs()
	for b.Loop() {
		rand.Read(nonce)
		ct := aead.Seal(nil, nonce, pt, nil)
		if _, err := aead.Open(nil, nonce, ct, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzClaims opens arbitrary payloads through a codec that does not
// authenticate: the claims decoder must never panic and must accept only
// well-formed, matching claims.
func FuzzClaims(f *testing.F) {
	good := goodClaims()
	for _, seed := range [][]byte{good, good[:5], good[:20], {1}, {1, 0x80}, {}, {1, 1, 1, 0, 0xff, 0xff}} {
		f.Add(string(seed))
	}
	s := &Sealer{Codec: plainCodec{}, TTL: time.Minute, Now: (&clock{time.UnixMilli(1000)}).now}
	f.Fuzz(func(t *testing.T, payload string) {
		cl, err := s.Open(payload, Binding{Method: "tools/call", Target: "x"})
		if err == nil && (cl.V != 1 || cl.Method != "tools/call" || cl.Target != "x") {
			t.Fatalf("accepted %q as %+v", payload, cl)
		}
	})
}

func TestAllocsSealOpen(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocation counts differ under -race and -short")
	}
	s := &Sealer{Codec: ring(t, key(1)), TTL: time.Minute, Audience: "svc"}
	n := testing.AllocsPerRun(200, func() {
		tok, _ := s.Seal(base, state1K)
		s.Open(tok, base)
	})
	const budget = 4 // measured: 2 (the token and the opened buffer; scratch is pooled)
	if n > budget {
		t.Errorf("seal + open: %.0f allocations, budget %d", n, budget)
	}
}

func TestParseKeys(t *testing.T) {
	a, b := base64.RawURLEncoding.EncodeToString(key(1)), base64.URLEncoding.EncodeToString(key(2))
	keys, err := ParseKeys(" " + a + ", ," + b + " ")
	if err != nil || len(keys) != 2 || !bytes.Equal(keys[0], key(1)) || !bytes.Equal(keys[1], key(2)) {
		t.Fatalf("%x %v", keys, err)
	}
	if _, err := ParseKeys(a + ",not base64!"); err == nil {
		t.Error("a malformed key was accepted")
	}
	if keys, err := ParseKeys(""); err != nil || len(keys) != 0 {
		t.Errorf("empty list: %v %v", keys, err)
	}
}
