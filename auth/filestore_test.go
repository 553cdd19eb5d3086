package auth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestFileTokenStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "nested", "roundtrip")
	file := filepath.Join(dir, "tokens.json")
	s, err := NewFileTokenStore(file)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := s.Load(ctx, "http://a/mcp"); err != nil || tok != nil {
		t.Fatalf("Load from a missing file = %v, %v", tok, err)
	}
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	want := Token{AccessToken: "at", TokenType: "Bearer", RefreshToken: "rt", Expiry: exp, Scope: "a b", Issuer: "https://as", Resource: "http://a/mcp", ClientID: "c"}
	if err := s.Save(ctx, "http://a/mcp", &want); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, "http://b/mcp", &Token{AccessToken: "other"}); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		for path, mode := range map[string]os.FileMode{file: 0o600, dir: 0o700} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != mode {
				t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), mode)
			}
		}
	}
	// Another store (another run) reads what was saved.
	s2, _ := NewFileTokenStore(file)
	got, err := s2.Load(ctx, "http://a/mcp")
	if err != nil || got == nil || *got != want {
		t.Fatalf("Load after a restart = %+v, %v; want %+v", got, err, want)
	}
	// A change by the other store is seen by the first.
	if err := s2.Delete(ctx, "http://b/mcp"); err != nil {
		t.Fatal(err)
	}
	if tok, err := s.Load(ctx, "http://b/mcp"); err != nil || tok != nil {
		t.Errorf("a token deleted by another store is still loaded: %+v, %v", tok, err)
	}
	// A loaded token is a copy.
	got.AccessToken = "mutated"
	if again, _ := s2.Load(ctx, "http://a/mcp"); again.AccessToken != "at" {
		t.Errorf("mutating a loaded token changed the store")
	}
	// Clients, by issuer and redirect URL.
	c := &ClientCredentials{ClientID: "dyn-1", ClientSecret: "sec", AuthMethod: AuthMethodClientSecretBasic}
	if err := s.SaveClient(ctx, "https://as", "http://127.0.0.1:1/cb", c); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveClient(ctx, "https://as", "http://127.0.0.1:1/cb", &ClientCredentials{ClientID: "dyn-2"}); err != nil {
		t.Fatal(err)
	}
	if lc, err := s2.LoadClient(ctx, "https://as", "http://127.0.0.1:1/cb"); err != nil || lc == nil || lc.ClientID != "dyn-2" {
		t.Errorf("LoadClient = %+v, %v; want the replacement dyn-2", lc, err)
	}
	for _, k := range [][2]string{{"https://as", "http://127.0.0.1:2/cb"}, {"https://other", "http://127.0.0.1:1/cb"}} {
		if lc, err := s2.LoadClient(ctx, k[0], k[1]); err != nil || lc != nil {
			t.Errorf("LoadClient%v = %+v, %v; want none", k, lc, err)
		}
	}
	// No temporary files are left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want the file only", len(entries))
	}
	// A file that is not a store is an error naming it, not a panic or an
	// empty store that would be overwritten.
	if err := os.WriteFile(file, []byte("[1,2"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3, _ := NewFileTokenStore(file)
	if _, err := s3.Load(ctx, "http://a/mcp"); err == nil {
		t.Errorf("a corrupt file loaded without error")
	}
	if err := s3.Save(ctx, "http://a/mcp", &want); err == nil {
		t.Errorf("a corrupt file was overwritten")
	}
	if _, err := NewFileTokenStore(""); err == nil {
		t.Errorf("an empty path was accepted")
	}
}

// TestFileTokenStoreConcurrent saves from many goroutines: every token
// ends up in the file (run with -race).
func TestFileTokenStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "tokens.json")
	s, _ := NewFileTokenStore(file)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("http://h/%d", i)
			if err := s.Save(ctx, key, &Token{AccessToken: key}); err != nil {
				t.Error(err)
			}
			if _, err := s.Load(ctx, key); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	s2, _ := NewFileTokenStore(file)
	for i := range 20 {
		key := fmt.Sprintf("http://h/%d", i)
		if tok, err := s2.Load(ctx, key); err != nil || tok == nil || tok.AccessToken != key {
			t.Errorf("%s: %+v, %v", key, tok, err)
		}
	}
}

func TestTokenKey(t *testing.T) {
	k, err := TokenKey("HTTP://Example.COM:8080/mcp?x=1#f")
	if err != nil || k != "http://example.com:8080/mcp" {
		t.Errorf("TokenKey = %q, %v", k, err)
	}
	for _, bad := range []string{"/relative", "%%", ""} {
		if _, err := TokenKey(bad); err == nil {
			t.Errorf("TokenKey(%q) accepted", bad)
		}
	}
}

// TestClientStoreAfterRestart: with a ClientStore, a second Transport
// (a restart) refreshes the stored token with the stored dynamic
// registration instead of registering and authorizing again.
func TestClientStoreAfterRestart(t *testing.T) {
	m := newMock(t, func(m *mock) { m.refreshTokens = true; m.challengeScope = "mcp" })
	store, _ := NewFileTokenStore(filepath.Join(t.TempDir(), "t.json"))
	tr := newTestTransport(t, func(o *Options) { o.TokenStore, o.ClientStore = store, store })
	if st, _, err := post(t, tr, m, `{"n":1}`); err != nil || st != 200 {
		t.Fatalf("first request: %d, %v", st, err)
	}
	// The server forgets the access token; only a refresh (by the
	// registered client) or a new authorization can help.
	m.mu.Lock()
	clear(m.scopes)
	m.mu.Unlock()
	tr2 := newTestTransport(t, func(o *Options) { o.TokenStore, o.ClientStore = store, store })
	if st, _, err := post(t, tr2, m, `{"n":2}`); err != nil || st != 200 {
		t.Fatalf("after the restart: %d, %v", st, err)
	}
	auths, tokens, regs := m.snapshot()
	if len(auths) != 1 || len(regs) != 1 {
		t.Errorf("%d authorizations and %d registrations, want one each", len(auths), len(regs))
	}
	if len(tokens) != 2 || tokens[1].form.Get("grant_type") != "refresh_token" || tokens[1].form.Get("client_id") != "client-1" {
		t.Errorf("token requests = %+v, want a code exchange then a refresh by client-1", tokens)
	}
	// Without a ClientStore the same restart has to authorize again.
	m.mu.Lock()
	clear(m.scopes)
	m.mu.Unlock()
	tr3 := newTestTransport(t, func(o *Options) { o.TokenStore = store })
	if st, _, err := post(t, tr3, m, `{"n":3}`); err != nil || st != 200 {
		t.Fatalf("without a client store: %d, %v", st, err)
	}
	if auths, _, regs := m.snapshot(); len(auths) != 2 || len(regs) != 2 {
		t.Errorf("without a client store: %d authorizations and %d registrations, want two each", len(auths), len(regs))
	}
}
