package testutil

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it, and is safe for concurrent use:
// a server's logger or a child process may write to it while the test
// reads String. The zero value is an empty buffer ready to use; a Buffer
// must not be copied after first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
