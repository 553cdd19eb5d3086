package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// maxStoreFileBytes bounds the token file a FileTokenStore reads.
const maxStoreFileBytes = 4 << 20

// FileTokenStore is a TokenStore (and a ClientStore) in a JSON file, so
// that a command-line tool does not need a new authorization on every
// run. Every change rewrites the whole file atomically (a temporary file
// in the same directory, synced, then renamed over it) with permissions
// 0600; missing directories are created with 0700. The file holds
// access and refresh tokens and client secrets: it is as sensitive as a
// password.
//
// It is safe for concurrent use within a process. Processes sharing a
// file never see a torn file, but two of them saving at the same moment
// may lose one of the two changes (there is no file lock); the loser
// then authorizes again.
type FileTokenStore struct {
	path string

	mu sync.Mutex
	// the file's contents as last read or written, and its size and
	// modification time then (a change by another process is noticed by
	// those)
	cache   *storeFile
	size    int64
	modTime time.Time
}

// storeFile is the file's JSON layout.
type storeFile struct {
	Tokens  map[string]Token `json:"tokens,omitempty"`
	Clients []storedClient   `json:"clients,omitempty"`
}

type storedClient struct {
	Issuer       string `json:"issuer"`
	RedirectURL  string `json:"redirect_url"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	AuthMethod   string `json:"auth_method,omitempty"`
}

// NewFileTokenStore returns a store in the file at path. The file is
// read when first needed and created on the first save.
func NewFileTokenStore(path string) (*FileTokenStore, error) {
	if path == "" {
		return nil, errors.New("auth: NewFileTokenStore needs a file path")
	}
	return &FileTokenStore{path: path}, nil
}

// Path returns the file's path.
func (s *FileTokenStore) Path() string { return s.path }

// Load implements TokenStore.
func (s *FileTokenStore) Load(_ context.Context, key string) (*Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.readLocked()
	if err != nil {
		return nil, err
	}
	t, ok := f.Tokens[key]
	if !ok {
		return nil, nil
	}
	return &t, nil
}

// Save implements TokenStore.
func (s *FileTokenStore) Save(_ context.Context, key string, tok *Token) error {
	if tok == nil {
		return errors.New("auth: FileTokenStore.Save: nil token")
	}
	return s.update(func(f *storeFile) bool {
		if f.Tokens == nil {
			f.Tokens = map[string]Token{}
		}
		f.Tokens[key] = *tok
		return true
	})
}

// Delete implements TokenStore.
func (s *FileTokenStore) Delete(_ context.Context, key string) error {
	return s.update(func(f *storeFile) bool {
		if _, ok := f.Tokens[key]; !ok {
			return false
		}
		delete(f.Tokens, key)
		return true
	})
}

// LoadClient implements ClientStore.
func (s *FileTokenStore) LoadClient(_ context.Context, issuer, redirectURL string) (*ClientCredentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.readLocked()
	if err != nil {
		return nil, err
	}
	for _, c := range f.Clients {
		if c.Issuer == issuer && c.RedirectURL == redirectURL && c.ClientID != "" {
			return &ClientCredentials{ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthMethod: c.AuthMethod}, nil
		}
	}
	return nil, nil
}

// SaveClient implements ClientStore.
func (s *FileTokenStore) SaveClient(_ context.Context, issuer, redirectURL string, c *ClientCredentials) error {
	if c == nil || c.ClientID == "" {
		return errors.New("auth: FileTokenStore.SaveClient: no client id")
	}
	sc := storedClient{Issuer: issuer, RedirectURL: redirectURL, ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthMethod: c.AuthMethod}
	return s.update(func(f *storeFile) bool {
		for i := range f.Clients {
			if f.Clients[i].Issuer == issuer && f.Clients[i].RedirectURL == redirectURL {
				f.Clients[i] = sc
				return true
			}
		}
		f.Clients = append(f.Clients, sc)
		return true
	})
}

// update applies change to the current contents and writes the file
// when change reports a modification.
func (s *FileTokenStore) update(change func(*storeFile) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.readLocked()
	if err != nil {
		return err
	}
	next := f.clone()
	if !change(next) {
		return nil
	}
	return s.writeLocked(next)
}

// readLocked returns the file's contents, read again when its size or
// modification time changed since the last read or write.
func (s *FileTokenStore) readLocked() (*storeFile, error) {
	fi, err := os.Stat(s.path)
	if errors.Is(err, fs.ErrNotExist) {
		s.cache, s.size, s.modTime = &storeFile{}, -1, time.Time{}
		return s.cache, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth: token file: %w", err)
	}
	if s.cache != nil && fi.Size() == s.size && fi.ModTime().Equal(s.modTime) {
		return s.cache, nil
	}
	fh, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("auth: token file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxStoreFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("auth: token file %s: %w", s.path, err)
	}
	if len(b) > maxStoreFileBytes {
		return nil, fmt.Errorf("auth: token file %s: more than %d bytes", s.path, maxStoreFileBytes)
	}
	f := &storeFile{}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, f); err != nil {
			return nil, fmt.Errorf("auth: token file %s is not a token store (delete it to start afresh): %w", s.path, err)
		}
	}
	s.cache, s.size, s.modTime = f, fi.Size(), fi.ModTime()
	return f, nil
}

// writeLocked replaces the file atomically with f.
func (s *FileTokenStore) writeLocked(f *storeFile) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: token file: %w", err)
	}
	b = append(b, '\n')
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: token file directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(s.path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("auth: token file: %w", err)
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("auth: token file: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		return fmt.Errorf("auth: writing the token file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("auth: writing the token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("auth: writing the token file: %w", err)
	}
	if err := os.Rename(name, s.path); err != nil {
		return fmt.Errorf("auth: replacing the token file: %w", err)
	}
	ok = true
	s.cache = f
	if fi, err := os.Stat(s.path); err == nil {
		s.size, s.modTime = fi.Size(), fi.ModTime()
	} else {
		s.size = -1 // read again next time
	}
	return nil
}

func (f *storeFile) clone() *storeFile {
	c := &storeFile{Clients: append([]storedClient(nil), f.Clients...)}
	if f.Tokens != nil {
		c.Tokens = make(map[string]Token, len(f.Tokens))
		for k, v := range f.Tokens {
			c.Tokens[k] = v
		}
	}
	return c
}

// TokenKey returns the key under which a Transport stores the token for
// the MCP server at serverURL (its scheme, host and path): the key to
// Delete from a TokenStore to forget that server's token.
func TokenKey(serverURL string) (string, error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", fmt.Errorf("auth: %w", err)
	}
	if u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("auth: server URL %q is not absolute", serverURL)
	}
	return resourceKey(u), nil
}
