package linepipe

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func waitErr(t *testing.T, errs <-chan error) error {
	t.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not return")
		return nil
	}
}

// The pipe's read deadline: a blocked Read fails with
// os.ErrDeadlineExceeded once it passes, the zero time clears it, and
// data written meanwhile is not lost.
func TestInMemoryPipeReadDeadline(t *testing.T) {
	t.Parallel()
	ce, se := New()
	defer ce.Close()
	errs := make(chan error, 1)
	go func() { _, err := ce.Read(make([]byte, 8)); errs <- err }()
	ce.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err := waitErr(t, errs); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read past its deadline returned %v", err)
	}
	ce.SetReadDeadline(time.Unix(1, 0))
	if _, err := ce.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read after a past deadline returned %v", err)
	}
	ce.SetReadDeadline(time.Time{})
	io.WriteString(se, "kept")
	b := make([]byte, 8)
	n, err := ce.Read(b)
	if err != nil || !strings.HasPrefix(string(b[:n]), "kept") {
		t.Fatalf("after clearing the deadline: %q, %v", b[:n], err)
	}
}

// Closing an end lets the other read what was written before, then
// io.EOF; writes on either side then fail with io.ErrClosedPipe.
func TestInMemoryPipeCloseEndsBothDirections(t *testing.T) {
	t.Parallel()
	a, b := New()
	io.WriteString(a, "last")
	a.Close()
	got, err := io.ReadAll(b)
	if err != nil || string(got) != "last" {
		t.Fatalf("the other end read %q, %v", got, err)
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("a write on the closed end: %v", err)
	}
	if _, err := b.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("a write towards the closed end: %v", err)
	}
}

// A line longer than the bound is skipped whole, reported with its
// first 256 bytes, and the next line reads as usual.
func TestLineReaderSkipsALineTooLongAndGoesOn(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100<<10)
	var r Reader
	r.Reset(strings.NewReader("ok\n"+long+"\nnext\nlast"), 1024)
	for i, want := range []struct {
		line, head string
		err        error
	}{
		{"ok", "", nil},
		{"", long[:256], ErrLineTooLong},
		{"next", "", nil},
		{"last", "", io.EOF},
	} {
		line, head, err := r.Next()
		if string(line) != want.line || string(head) != want.head || !errors.Is(err, want.err) {
			t.Fatalf("line %d: %q (head %d bytes), %v; want %q, %v", i, line, len(head), err, want.line, want.err)
		}
	}
}

// A read stopped mid-line by a deadline keeps what it read: the next
// read returns the whole line.
func TestLineReaderKeepsALineAcrossADeadline(t *testing.T) {
	t.Parallel()
	a, b := New()
	defer a.Close()
	var r Reader
	r.Reset(b, 1024)
	io.WriteString(a, `{"half":`)
	b.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, _, err := r.Next(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read past its deadline returned %v", err)
	}
	b.SetReadDeadline(time.Time{})
	io.WriteString(a, "1}\n")
	line, _, err := r.Next()
	if err != nil || string(line) != `{"half":1}` {
		t.Fatalf("after the deadline: %q, %v", line, err)
	}
}
