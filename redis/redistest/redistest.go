// Package redistest starts a real redis-server for tests: on a Unix socket
// in the test's temporary directory (no TCP port), stopped when the test
// ends. The test command installs the Debian package redis-server.
package redistest

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// Start runs redis-server on a Unix socket for the duration of t and
// returns the path of its socket.
func Start(t testing.TB) string {
	t.Helper()
	return StartServer(t, false).Sock
}

// Client returns a new client of the server at sock, closed when t ends.
func Client(t testing.TB, sock string) *redis.Client {
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock})
	t.Cleanup(func() { c.Close() })
	return c
}
