package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// The subjects of the comparison. Each one serves the same two tools and
// drives them with its own client:
//
//   - echo: arguments {"text": s}, result one text block s;
//   - ask: a multi round-trip tool. The first leg answers input_required
//     with one form elicitation ("Your name?", {"name": string}); the
//     client's elicitation handler answers {"name": "Ada"} automatically
//     and retries; the second leg completes with "hello Ada".
//
// Every subject speaks protocol revision 2026-07-28 (the captures under
// testdata/ and capture_test.go prove it).

const (
	protocolVersion = "2026-07-28"
	answerName      = "Ada"
	askMessage      = "Your name?"
	askResult       = "hello " + answerName
)

// caller is one subject's client, bound to one server.
type caller interface {
	// call calls tool with arguments {"text": text} and returns the text
	// of the result's first content block.
	call(ctx context.Context, tool, text string) (string, error)
	close() error
}

// subject is one SDK (or the raw baseline).
type subject struct {
	name string
	// note says how the subject is configured, for the docs.
	note string
	// handler returns the subject's Streamable HTTP server.
	handler func(tb testing.TB) http.Handler
	// httpClient connects the subject's client to the MCP endpoint url
	// through hc.
	httpClient func(tb testing.TB, url string, hc *http.Client) caller
	// servePipe serves the subject's server on r and w (newline-delimited
	// JSON-RPC, the stdio framing) until r ends.
	servePipe func(tb testing.TB, r io.ReadCloser, w io.WriteCloser)
	// pipeClient connects the subject's client to a server reading what
	// it writes to w and writing what it reads from r.
	pipeClient func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller
}

// subjects in the order of the tables.
var subjects = []subject{roundtripSubject, gosdkSubject, mcpgoSubject, rawSubject}

// newHTTPClient is the *http.Client every subject's HTTP client uses: its
// own transport, keeping enough idle connections for the parallel
// benchmark.
func newHTTPClient(rt http.RoundTripper) *http.Client {
	if rt == nil {
		rt = newTransport()
	}
	return &http.Client{Transport: rt}
}

func newTransport() *http.Transport {
	return &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
}

// serveHTTP serves h on a loopback listener and returns the endpoint URL.
func serveHTTP(tb testing.TB, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}

// httpCaller starts s's server on loopback HTTP and returns its client.
func httpCaller(tb testing.TB, s subject, rt http.RoundTripper) caller {
	url := serveHTTP(tb, s.handler(tb))
	c := s.httpClient(tb, url, newHTTPClient(rt))
	tb.Cleanup(func() { c.close() })
	return c
}

// pipePair is two os.Pipes: the client writes cw and reads cr, the server
// reads sr and writes sw.
type pipePair struct {
	cr, sr io.ReadCloser
	cw, sw io.WriteCloser
}

func newPipes(tb testing.TB) pipePair {
	inR, inW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	return pipePair{cr: outR, cw: inW, sr: inR, sw: outW}
}

// pipeCaller serves s's server on one end of an os.Pipe pair and returns
// its client on the other. wrap, when set, wraps the writers of both
// sides (the captures record through it).
func pipeCaller(tb testing.TB, s subject, wrapClient, wrapServer func(io.WriteCloser) io.WriteCloser) caller {
	p := newPipes(tb)
	if wrapClient != nil {
		p.cw = wrapClient(p.cw)
	}
	if wrapServer != nil {
		p.sw = wrapServer(p.sw)
	}
	s.servePipe(tb, p.sr, p.sw)
	c := s.pipeClient(tb, p.cr, p.cw)
	tb.Cleanup(func() {
		c.close()
		p.cw.Close()
		p.cr.Close()
	})
	return c
}

// rwc joins a pipe's reading and writing ends for the clients that want
// one io.ReadWriteCloser.
type rwc struct {
	io.ReadCloser
	w io.WriteCloser
}

func (p rwc) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p rwc) Close() error                { return errors.Join(p.w.Close(), p.ReadCloser.Close()) }

// callWant calls tool with text and fails unless the result is want.
func callWant(ctx context.Context, c caller, tool, text, want string) error {
	got, err := c.call(ctx, tool, text)
	if err != nil {
		return err
	}
	if got != want {
		if len(got) > 80 {
			got = got[:80] + "..."
		}
		if len(want) > 80 {
			want = want[:80] + "..."
		}
		return fmt.Errorf("%s: got %q, want %q", tool, got, want)
	}
	return nil
}

// errorResult describes a result that is not the expected text.
func errorResult(v any) error { return fmt.Errorf("unexpected result %+v", v) }

// SetReadDeadline is the reading end's (an *os.File pipe): roundtrip's
// stream client transport uses it to stop a call that reads its own
// response when the call's context ends.
func (p rwc) SetReadDeadline(t time.Time) error {
	if d, ok := p.ReadCloser.(interface{ SetReadDeadline(time.Time) error }); ok {
		return d.SetReadDeadline(t)
	}
	return os.ErrNoDeadline
}
