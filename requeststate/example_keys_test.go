package requeststate_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/roundtrip-mcp/roundtrip/requeststate"
)

// The three phases of a key rotation on one KeyRing: a state sealed
// before each phase still opens after it, until the old key retires.
func ExampleKeyRing_SetKeys() {
	// #region rotation
	oldKey, newKey := requeststate.GenerateKey(), requeststate.GenerateKey()
	ring, err := requeststate.NewKeyRing(oldKey)
	if err != nil {
		panic(err)
	}
	before, _ := ring.Seal([]byte("sealed with OLD"))

	// Phase 1, on every instance: learn NEW; OLD still seals.
	_ = ring.SetKeys(oldKey, newKey)
	// Phase 2, once phase 1 is everywhere: NEW seals, OLD verifies.
	_ = ring.SetKeys(newKey, oldKey)
	during, _ := ring.Seal([]byte("sealed with NEW"))
	_, err = ring.Unseal(before)
	fmt.Println("phase 2, OLD state opens:", err == nil)
	// Phase 3, one state TTL after phase 2 is everywhere: OLD retires.
	_ = ring.SetKeys(newKey)
	_, err = ring.Unseal(before)
	fmt.Println("phase 3, OLD state opens:", err == nil)
	b, err := ring.Unseal(during)
	fmt.Println("phase 3, NEW state:", string(b), err)
	// #endregion rotation

	// Output:
	// phase 2, OLD state opens: true
	// phase 3, OLD state opens: false
	// phase 3, NEW state: sealed with NEW <nil>
}

// A key file keeps a ring in step with a file: rewrite the file on every
// instance and reload it (on SIGHUP, or with Watch) for each phase of a
// rotation; no restart, no key on a command line.
func ExampleOpenKeyFile() {
	dir, _ := os.MkdirTemp("", "keys")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "state.keys")
	enc := base64.RawURLEncoding.EncodeToString
	oldKey, newKey := requeststate.GenerateKey(), requeststate.GenerateKey()

	// #region key-file
	// The file: base64url keys, the sealing key first, # comments.
	_ = os.WriteFile(path, []byte("# request-state keys\n"+enc(oldKey)+"\n"), 0o600)
	kf, err := requeststate.OpenKeyFile(path)
	if err != nil {
		panic(err)
	}
	kf.OnReload = func(ids []string, err error) {
		fmt.Println("reloaded:", len(ids), "keys", err)
	}
	// kf.Ring is the server's codec:
	//   mcp.ServerOptions{RequestState: mcp.RequestStateOptions{Codec: kf.Ring}}
	// and, in main: on SIGHUP, kf.Reload(); or go kf.Watch(ctx, 0).

	// Phase 1 of a rotation: append the new key.
	_ = os.WriteFile(path, []byte(enc(oldKey)+"\n"+enc(newKey)+"\n"), 0o600)
	changed, err := kf.Reload()
	// #endregion key-file
	fmt.Println("changed:", changed, err)
	fmt.Println("keys in the ring:", len(kf.Ring.KeyIDs()))
	// Output:
	// reloaded: 2 keys <nil>
	// changed: true <nil>
	// keys in the ring: 2
}
