package auth

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"
)

func pemBlock(t testing.TB, typ string, der []byte, headers map[string]string) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: der})
}

func pkcs8(t testing.TB, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestParsePrivateKey(t *testing.T) {
	ec := mustKey(t, "P-256").(*ecdsa.PrivateKey)
	rk := mustKey(t, "RSA").(*rsa.PrivateKey)
	ed := mustKey(t, "Ed25519").(ed25519.PrivateKey)
	sec1, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		pem     []byte
		wantAlg string
	}{
		"PKCS #8 ECDSA":   {pemBlock(t, "PRIVATE KEY", pkcs8(t, ec), nil), "ES256"},
		"PKCS #8 RSA":     {pemBlock(t, "PRIVATE KEY", pkcs8(t, rk), nil), "RS256"},
		"PKCS #8 Ed25519": {pemBlock(t, "PRIVATE KEY", pkcs8(t, ed), nil), "EdDSA"},
		"PKCS #1 RSA":     {pemBlock(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk), nil), "RS256"},
		"SEC 1 ECDSA":     {append([]byte("leading text\n"), pemBlock(t, "EC PRIVATE KEY", sec1, nil)...), "ES256"},
	} {
		k, err := ParsePrivateKey(tc.pem)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if alg, err := signingAlgorithm(k, ""); err != nil || string(alg) != tc.wantAlg {
			t.Errorf("%s: algorithm %q, %v; want %s", name, alg, err, tc.wantAlg)
		}
	}

	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"empty":               nil,
		"not PEM":             []byte("-----BEGIN nothing"),
		"public key":          pemBlock(t, "PUBLIC KEY", []byte{1, 2, 3}, nil),
		"garbage DER":         pemBlock(t, "PRIVATE KEY", []byte("not DER"), nil),
		"encrypted":           pemBlock(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rk), map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}),
		"X25519 (no signing)": pemBlock(t, "PRIVATE KEY", pkcs8(t, x), nil),
		"short RSA":           pemBlock(t, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(mustKey(t, "RSA-1024").(*rsa.PrivateKey)), nil),
		"too large":           []byte(strings.Repeat("A", maxPrivateKeyPEM+1)),
	} {
		if k, err := ParsePrivateKey(in); err == nil || k != nil {
			t.Errorf("%s: got %T, %v; want an error", name, k, err)
		}
	}
}

// FuzzParsePrivateKey: any input is a key that can sign a client
// assertion, or an error; never a panic.
func FuzzParsePrivateKey(f *testing.F) {
	ec := mustKey(f, "P-256")
	f.Add(pemBlock(f, "PRIVATE KEY", pkcs8(f, ec), nil))
	f.Add(pemBlock(f, "PRIVATE KEY", pkcs8(f, mustKey(f, "Ed25519")), nil))
	f.Add(pemBlock(f, "EC PRIVATE KEY", []byte{0x30, 0x03, 0x02, 0x01, 0x01}, nil))
	f.Add(pemBlock(f, "RSA PRIVATE KEY", []byte{0x30, 0x00}, nil))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n"))
	f.Add([]byte("not a key"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParsePrivateKey(b)
		if err != nil {
			if k != nil {
				t.Fatal("a key and an error")
			}
			return
		}
		c := &ClientCredentials{ClientID: "c", PrivateKey: k}
		if _, err := clientAssertion(c, "https://as.example", time.Now()); err != nil {
			t.Fatalf("parsed key cannot sign: %v", err)
		}
	})
}
