// Package testredis starts a real redis-server for tests: on a Unix socket
// in the test's temporary directory (no TCP port), stopped when the test
// ends. The test command installs the Debian package redis-server.
package testredis

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start runs redis-server for the duration of t and returns the path of
// its socket.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is required (the test command installs it): %v", err)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := Client(t, sock)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for c.Ping(ctx).Err() != nil {
		select {
		case <-ctx.Done():
			t.Fatal("redis-server did not come up")
		case <-time.After(20 * time.Millisecond):
		}
	}
	return sock
}

// Client returns a new client of the server at sock, closed when t ends.
func Client(t testing.TB, sock string) *redis.Client {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	t.Cleanup(func() { c.Close() })
	return c
}
