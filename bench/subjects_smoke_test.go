package bench

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSubjects runs every workload once for every subject.
func TestSubjects(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 1<<20)
	for _, s := range subjects {
		t.Run(s.name+"/http", func(t *testing.T) {
			c := httpCaller(t, s, nil)
			if err := callWant(ctx, c, "echo", "hello", "hello"); err != nil {
				t.Fatal("echo:", err)
			}
			if err := callWant(ctx, c, "echo", big, big); err != nil {
				t.Fatal("echo 1 MiB:", err)
			}
			if err := callWant(ctx, c, "ask", "hello", askResult); err != nil {
				t.Fatal("ask:", err)
			}
		})
		t.Run(s.name+"/pipe", func(t *testing.T) {
			c := pipeCaller(t, s, nil, nil)
			if err := callWant(ctx, c, "echo", "hello", "hello"); err != nil {
				t.Fatal("echo:", err)
			}
		})
	}
}

// TestKeepAlive checks that every subject's HTTP client reuses its
// connection, so that no subject pays a TCP handshake per call.
func TestKeepAlive(t *testing.T) {
	for _, s := range subjects {
		t.Run(s.name, func(t *testing.T) {
			var conns atomic.Int64
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: s.handler(t), ConnState: func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}}
			go srv.Serve(ln)
			defer srv.Close()
			c := s.httpClient(t, "http://"+ln.Addr().String()+"/mcp", newHTTPClient(nil))
			defer c.close()
			for range 20 {
				if err := callWant(context.Background(), c, "echo", "hello", "hello"); err != nil {
					t.Fatal(err)
				}
			}
			if n := conns.Load(); n != 1 {
				t.Fatalf("%d connections for 20 calls", n)
			}
		})
	}
}
