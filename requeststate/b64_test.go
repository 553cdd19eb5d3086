package requeststate

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// FuzzBase64 checks the token codec against encoding/base64 on
// arbitrary text, and on long valid encodings (the vector paths start at
// 45 characters) with one byte replaced.
func FuzzBase64(f *testing.F) {
	long := bytes.Repeat([]byte("0123456789abcdefghij\xff\xfe"), 20)
	for i, s := range []string{"", "A", "AA", "AB", "AAA", "AAB", "AAAA", "QUJD", "QUJDRA", "QUJDRE", "_-_-_-_-x", "AAAAAAAA\n", "AAAA=", "AAAAAAAAAAAA\r", "\xff\xfe"} {
		f.Add(s, long[:i*17], uint16(i*13), "=+/\r\n.\x80A_-"[i%10])
	}
	f.Fuzz(func(t *testing.T, s string, data []byte, pos uint16, c byte) {
		checkBase64(t, s)
		enc := []byte(base64.RawURLEncoding.EncodeToString(data))
		checkBase64(t, string(enc))
		if len(enc) > 0 {
			enc[int(pos)%len(enc)] = c
			checkBase64(t, string(enc))
		}
	})
}

func checkBase64(t *testing.T, s string) {
	t.Helper()
	// Decoding agrees with the strict standard decoder, which
	// additionally skips \r and \n.
	want, werr := base64.RawURLEncoding.Strict().DecodeString(s)
	if strings.ContainsAny(s, "\r\n") {
		werr = base64.CorruptInputError(0)
	}
	dst := make([]byte, len(s))
	n, ok := b64Decode(dst, s)
	if ok != (werr == nil) {
		t.Fatalf("decode %q: ok %v, encoding/base64 %v", s, ok, werr)
	}
	if ok && !bytes.Equal(dst[:n], want) {
		t.Fatalf("decode %q: %x, encoding/base64 %x", s, dst[:n], want)
	}
	if ok && b64DecodedLen(len(s)) != n {
		t.Fatalf("decode %q: length %d, want %d", s, n, b64DecodedLen(len(s)))
	}
	// Encoding agrees with the standard encoder on the same bytes.
	src := []byte(s)
	enc := make([]byte, b64EncodedLen(len(src)))
	b64Encode(enc, src)
	if w := base64.RawURLEncoding.EncodeToString(src); string(enc) != w {
		t.Fatalf("encode %x: %q, encoding/base64 %q", src, enc, w)
	}
}

// Every byte value at every position of a long token: only the
// alphabet's characters decode (the ones that change the trailing bits
// of the last character excepted).
func TestBase64EveryByteEveryPosition(t *testing.T) {
	enc := []byte(base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{0x5a, 0xc3, 0x17}, 40)))
	enc = enc[:len(enc)-2] // end on a partial quantum: 2 trailing bits
	for pos := range enc {
		orig := enc[pos]
		for c := 0; c < 256; c++ {
			enc[pos] = byte(c)
			checkBase64(t, string(enc))
		}
		enc[pos] = orig
	}
}

func TestBase64Lengths(t *testing.T) {
	for n := 0; n < 64; n++ {
		src := bytes.Repeat([]byte{0xa5}, n)
		enc := make([]byte, b64EncodedLen(n))
		b64Encode(enc, src)
		if w := base64.RawURLEncoding.EncodeToString(src); string(enc) != w {
			t.Fatalf("encode %d bytes: %q, want %q", n, enc, w)
		}
		dst := make([]byte, n)
		m, ok := b64Decode(dst, string(enc))
		if !ok || !bytes.Equal(dst[:m], src) {
			t.Fatalf("round trip of %d bytes: %x ok=%v", n, dst[:m], ok)
		}
		if m, ok := b64Decode(dst[:max(n-1, 0)], string(enc)); ok && n > 0 {
			t.Fatalf("decoded %d bytes into a short buffer", m)
		}
	}
}

var benchRaw = bytes.Repeat([]byte("0123456789abcdefghij"), 55)

func BenchmarkB64Encode(b *testing.B) {
	dst := make([]byte, b64EncodedLen(len(benchRaw)))
	for b.Loop() {
		b64Encode(dst, benchRaw)
	}
}

func BenchmarkB64Decode(b *testing.B) {
	tok := base64.RawURLEncoding.EncodeToString(benchRaw)
	dst := make([]byte, len(benchRaw))
	for b.Loop() {
		b64Decode(dst, tok)
	}
}
