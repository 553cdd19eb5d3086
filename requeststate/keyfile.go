package requeststate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"runtime"
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
// Every key in it is exactly 32 bytes (GenerateKey's), so that a file
// read while it is being written, which can cut a longer key into a
// shorter valid one, is refused. Reload re-reads it (wire it to
// SIGHUP); Watch also re-reads it when its content changes. A file that
// does not parse, holds a key of another size, or holds keys NewKeyRing
// refuses, leaves the ring as it was. Replace the file whole (write
// another and rename it), mode 0600: a file readable by other users is
// warned about.
type KeyFile struct {
	// Path is the file.
	Path string
	// Ring is the ring the file's keys go into.
	Ring *KeyRing
	// OnReload, when set, is told of every reload that changed the keys
	// (with the new key ids, sealing key first) or failed (with the
	// error).
	OnReload func(keyIDs []string, err error)
	// Logger receives a warning when a file loaded is readable by other
	// users, and, when OnReload is nil, an error for each refused
	// reload (the previous keys stay); nil means slog.Default().
	Logger *slog.Logger

	mu  sync.Mutex
	sum [32]byte // of the content last loaded
}

// keyFileKeyBytes is the size of every key in a key file.
const keyFileKeyBytes = 32

// OpenKeyFile reads path and returns a KeyFile with a new ring over its
// keys. A file readable by other users is warned about through
// slog.Default().
func OpenKeyFile(path string) (*KeyFile, error) {
	keys, sum, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	warnReadable(slog.Default(), path)
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
	var keys [][]byte
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		list, err := ParseKeys(line)
		if err != nil {
			return nil, [32]byte{}, fmt.Errorf("requeststate: %s line %d: %w", path, n+1, err)
		}
		for _, k := range list {
			if len(k) != keyFileKeyBytes {
				return nil, [32]byte{}, fmt.Errorf("requeststate: %s line %d: a key of %d bytes; a key file's keys are exactly %d bytes (GenerateKey's), and a file read halfway through a write is not a key",
					path, n+1, len(k), keyFileKeyBytes)
			}
		}
		keys = append(keys, list...)
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
	logger := f.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if err == nil {
		f.sum = sum
		warnReadable(logger, f.Path)
	} else if f.OnReload == nil {
		logger.Error("requeststate: key file not reloaded; keeping the previous keys", "file", f.Path, "err", err)
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

// warnReadable warns when the file at path is readable by users other
// than its owner and group.
func warnReadable(logger *slog.Logger, path string) {
	if runtime.GOOS == "windows" {
		return // no such mode bits
	}
	fi, err := os.Stat(path)
	if err == nil && fi.Mode().Perm()&0o004 != 0 {
		logger.Warn("requeststate: the key file is readable by other users; make it mode 0600", "file", path, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()))
	}
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
