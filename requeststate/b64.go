package requeststate

import (
	"strings"
	"unsafe"

	"github.com/segmentio/asm/base64"
)

// Tokens are base64url (RFC 4648 §5) without padding. The codec is
// github.com/segmentio/asm/base64: its AVX2 (amd64) and NEON (arm64)
// paths encode a 1 KiB state about ten times faster than encoding/base64,
// which it falls back to elsewhere and for the last bytes. Decoding is
// strict: every byte outside the alphabet (padding, \r, \n and '/'
// included) and any non-zero trailing bit rejects. FuzzBase64 checks both
// directions against encoding/base64's strict decoder and its encoder.

var (
	b64     = base64.RawURLEncoding
	b64Dec  = base64.RawURLEncoding.Strict()
	b64Lens = base64.RawURLEncoding
)

// b64EncodedLen is the length of n bytes encoded.
func b64EncodedLen(n int) int { return b64Lens.EncodedLen(n) }

// b64Encode writes the encoding of src to dst, which must hold
// b64EncodedLen(len(src)) bytes.
func b64Encode(dst, src []byte) { b64.Encode(dst, src) }

// b64DecodedLen is the length src decodes to, or -1 when no encoding
// has that length.
func b64DecodedLen(n int) int {
	if n%4 == 1 {
		return -1
	}
	return n/4*3 + (n%4*6)/8
}

// b64Decode decodes src into dst, which must hold b64DecodedLen(len(src))
// bytes. It reports the length written and whether src was a canonical
// encoding.
func b64Decode(dst []byte, src string) (int, bool) {
	want := b64DecodedLen(len(src))
	if want < 0 || len(dst) < want {
		return 0, false
	}
	// encoding/base64 (and so the fallback) skips \r and \n, and the
	// vector path of the URL alphabet also takes '/' for '_' (found by
	// TestBase64EveryByteEveryPosition).
	if strings.IndexByte(src, '\r') >= 0 || strings.IndexByte(src, '\n') >= 0 || strings.IndexByte(src, '/') >= 0 {
		return 0, false
	}
	// The decoder only reads src: share the string's bytes rather than
	// copy a token that may be kilobytes long.
	n, err := b64Dec.Decode(dst, unsafe.Slice(unsafe.StringData(src), len(src)))
	return n, err == nil && n == want
}
