package requeststate

import (
	"encoding/base64"
	"os"
	"path/filepath"
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
