package requeststate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// KeyFile keeps a KeyRing in step with a file of keys, so that a fleet
// rolls the three phases of a rotation (see the package documentation)
// by rewriting the file on every instance, with no restart, and keys
// stay off command lines, where any user of the machine can read them.
//
// The file holds base64url keys, one per line or comma-separated, the
// sealing key first; blank lines and lines starting with # are ignored.
// Reload re-reads it (wire it to SIGHUP); Watch also re-reads it when
// its content changes. A file that does not parse, or holds keys
// NewKeyRing refuses, leaves the ring as it was.
type KeyFile struct {
	// Path is the file.
	Path string
	// Ring is the ring the file's keys go into.
	Ring *KeyRing
	// OnReload, when set, is told of every reload that changed the keys
	// (with the new key ids, sealing key first) or failed (with the
	// error).
	OnReload func(keyIDs []string, err error)

	mu  sync.Mutex
	sum [32]byte // of the content last loaded
}

// OpenKeyFile reads path and returns a KeyFile with a new ring over its
// keys.
func OpenKeyFile(path string) (*KeyFile, error) {
	keys, sum, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	ring, err := NewKeyRing(keys...)
	if err != nil {
		return nil, fmt.Errorf("requeststate: %s: %w", path, err)
	}
	return &KeyFile{Path: path, Ring: ring, sum: sum}, nil
}

// ReadKeyFile reads the keys of a key file (the format of KeyFile).
func ReadKeyFile(path string) ([][]byte, error) {
	keys, _, err := readKeyFile(path)
	return keys, err
}

func readKeyFile(path string) ([][]byte, [32]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("requeststate: reading the key file: %w", err)
	}
	var list []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		list = append(list, line)
	}
	keys, err := ParseKeys(strings.Join(list, ","))
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("requeststate: %s: %w", path, err)
	}
	if len(keys) == 0 {
		return nil, [32]byte{}, fmt.Errorf("requeststate: %s holds no key", path)
	}
	return keys, sha256.Sum256(bytes.TrimSpace(b)), nil
}

// Reload re-reads the file and, when its keys changed, puts them in the
// ring. It reports whether they changed.
func (f *KeyFile) Reload() (changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys, sum, err := readKeyFile(f.Path)
	if err == nil && sum == f.sum {
		return false, nil
	}
	if err == nil {
		err = f.Ring.SetKeys(keys...)
		if err != nil {
			err = fmt.Errorf("requeststate: %s: %w", f.Path, err)
		}
	}
	if err == nil {
		f.sum = sum
	}
	if f.OnReload != nil {
		var ids []string
		if err == nil {
			ids = f.Ring.KeyIDs()
		}
		f.OnReload(ids, err)
	}
	return err == nil, err
}

// Watch re-reads the file every interval (zero means two seconds) until
// ctx ends.
func (f *KeyFile) Watch(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.Reload()
		}
	}
}
