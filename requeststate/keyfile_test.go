package requeststate

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func writeKeys(t *testing.T, path string, keys ...[]byte) {
	t.Helper()
	var lines []string
	lines = append(lines, "# sealing key first")
	for _, k := range keys {
		lines = append(lines, base64.RawURLEncoding.EncodeToString(k))
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The three phases of a rotation roll by rewriting the file: no new
// ring, no restart, no state in flight lost.
func TestKeyFileRotatesTheRingWithoutARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	oldKey, newKey := key(1), key(2)
	writeKeys(t, path, oldKey)
	kf, err := OpenKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var reloads []string
	kf.OnReload = func(ids []string, err error) { reloads = append(reloads, strings.Join(ids, ",")) }
	s := &Sealer{Codec: kf.Ring, TTL: time.Minute, Audience: "svc"}
	inFlight, _ := s.Seal(base, "sealed with OLD")

	for phase, keys := range [][][]byte{{oldKey, newKey}, {newKey, oldKey}} {
		writeKeys(t, path, keys...)
		if changed, err := kf.Reload(); !changed || err != nil {
			t.Fatalf("phase %d: reload %v %v", phase+1, changed, err)
		}
		if _, err := s.Open(inFlight, base); err != nil {
			t.Fatalf("phase %d: a state sealed with OLD no longer opens: %v", phase+1, err)
		}
	}
	sealedNew, _ := s.Seal(base, "sealed with NEW")
	writeKeys(t, path, newKey) // phase 3: OLD retires
	kf.Reload()
	if _, err := s.Open(sealedNew, base); err != nil {
		t.Errorf("NEW's state after phase 3: %v", err)
	}
	if _, err := s.Open(inFlight, base); err == nil {
		t.Error("OLD's state still opens after OLD retired")
	}
	if len(reloads) != 3 {
		t.Errorf("reloads reported: %q", reloads)
	}
	if changed, _ := kf.Reload(); changed {
		t.Error("an unchanged file counted as a change")
	}
}

func TestKeyFileThatDoesNotParseKeepsTheKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, path, key(1))
	kf, err := OpenKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kf.Logger = slog.New(slog.DiscardHandler)
	before := kf.Ring.KeyIDs()
	for _, bad := range []string{"not base64!\n", "\n# nothing\n", base64.RawURLEncoding.EncodeToString([]byte("short")) + "\n"} {
		os.WriteFile(path, []byte(bad), 0o600)
		if _, err := kf.Reload(); err == nil {
			t.Errorf("%q accepted", bad)
		}
		if got := kf.Ring.KeyIDs(); strings.Join(got, ",") != strings.Join(before, ",") {
			t.Errorf("%q changed the keys to %v", bad, got)
		}
	}
	os.Remove(path)
	if _, err := kf.Reload(); err == nil {
		t.Error("a missing file reloaded")
	}
}

// A key file read while it is being written can end inside a key; a
// longer key cut short there decodes to another key of a valid length.
// Every key of a key file is exactly 32 bytes, so no cut key is taken:
// the ring keeps the previous keys and the refusal is logged.
func TestAHalfWrittenKeyFileKeepsThePreviousKeys(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, path, key(1))
	kf, err := OpenKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	kf.Logger = slog.New(slog.NewTextHandler(&log, nil))
	before := strings.Join(kf.Ring.KeyIDs(), ",")

	// A 64-byte key caught after 50 of its 86 characters: 37 bytes.
	long := base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 64))
	os.WriteFile(path, []byte("# new keys\n"+long[:50]), 0o600)
	if changed, err := kf.Reload(); changed || err == nil {
		t.Fatalf("a key cut at 37 bytes was loaded: %v %v", changed, err)
	}
	if got := strings.Join(kf.Ring.KeyIDs(), ","); got != before {
		t.Fatalf("the keys changed to %s", got)
	}
	if !strings.Contains(log.String(), "key file not reloaded") {
		t.Errorf("the refusal was not logged: %q", log.String())
	}

	// Every cut of a whole two-key file: refused, or (cut at the end of
	// a line) keys of the file itself.
	full := "# rotation\n" + base64.RawURLEncoding.EncodeToString(key(2)) + "\n" + base64.RawURLEncoding.EncodeToString(key(3)) + "\n"
	want := map[string]bool{}
	for _, id := range ring(t, key(2), key(3)).KeyIDs() {
		want[id] = true
	}
	for n := range len(full) + 1 {
		os.WriteFile(path, []byte(full[:n]), 0o600)
		kf.Reload()
		for _, id := range kf.Ring.KeyIDs() {
			if !want[id] && !strings.Contains(before, id) {
				t.Fatalf("the file cut after %d bytes loaded key %s, which it does not hold", n, id)
			}
		}
	}
	if got := strings.Join(kf.Ring.KeyIDs(), ","); got != strings.Join(ring(t, key(2), key(3)).KeyIDs(), ",") {
		t.Errorf("the whole file: keys %s", got)
	}
}

// A key file other users can read is warned about, on every load; one
// only its owner can read is not.
func TestAKeyFileReadableByOthersIsWarnedAbout(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no mode bits")
	}
	path := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, path, key(1))
	kf, err := OpenKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	kf.Logger = slog.New(slog.NewTextHandler(&log, nil))
	writeKeys(t, path, key(2))
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kf.Reload(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "readable by other users") || !strings.Contains(log.String(), "0644") {
		t.Fatalf("no warning for a file of mode 0644: %q", log.String())
	}
	log.Reset()
	writeKeys(t, path, key(3))
	os.Chmod(path, 0o600)
	if _, err := kf.Reload(); err != nil {
		t.Fatal(err)
	}
	if log.Len() != 0 {
		t.Errorf("a file of mode 0600 was warned about: %q", log.String())
	}
}
