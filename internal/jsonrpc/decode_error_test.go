package jsonrpc

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// An error object needs an integer code and a string message; data is
// kept unless null.
func TestAnErrorObjectNeedsAnIntegerCodeAndAMessage(t *testing.T) {
	t.Parallel()
	e, err := DecodeError([]byte(`{"code":-32000,"message":"busy","data":{"retryAfterMs":5}}`))
	if err != nil || e.Code != -32000 || e.Message != "busy" || string(e.Data) != `{"retryAfterMs":5}` {
		t.Fatalf("DecodeError = %+v, %v", e, err)
	}
	if e, err := DecodeError([]byte(`{"code":1,"message":"m","data":null}`)); err != nil || e.Data != nil {
		t.Fatalf("null data kept: %+v, %v", e, err)
	}
	for _, bad := range []string{`{"code":1.5,"message":"m"}`, `{"code":1}`, `{"message":"m"}`, `[]`, `{"code":1e400,"message":"m"}`, `{"code":"1","message":"m"}`} {
		if _, err := DecodeError([]byte(bad)); err == nil {
			t.Errorf("DecodeError(%s) accepted", bad)
		}
	}
}

// Clip keeps a short name and cuts a long one at a rune boundary.
func TestClipCutsALongNameAtARuneBoundary(t *testing.T) {
	t.Parallel()
	if got := Clip([]byte("name")); got != "name" {
		t.Fatalf("Clip(name) = %q", got)
	}
	long := strings.Repeat("a", 63) + "é" + strings.Repeat("b", 10)
	got := Clip([]byte(long))
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "…") || len(got) > 64+len("…") {
		t.Fatalf("Clip(long) = %q", got)
	}
}
