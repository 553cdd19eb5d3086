package auth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"
)

// DefaultLoopbackTimeout bounds the wait for the browser to come back to
// the loopback listener when LoopbackOptions.Timeout is zero.
const DefaultLoopbackTimeout = 5 * time.Minute

// ErrRedirectMismatch: the authorization URL handed to a loopback
// authorizer names another redirect_uri than the one it listens on
// (Options.RedirectURL and LoopbackOptions.RedirectURL differ).
var ErrRedirectMismatch = errors.New("auth: the authorization request's redirect_uri is not the loopback authorizer's")

// LoopbackOptions configure LoopbackAuthorizer.
type LoopbackOptions struct {
	// RedirectURL is the redirect URI the authorizer listens on: an http
	// URL on 127.0.0.1, [::1] or localhost with an explicit, non-zero
	// port, such as "http://127.0.0.1:8765/callback" (RFC 8252 section
	// 7.3). Options.RedirectURL must be the same string. Required.
	RedirectURL string
	// Open sends the user to the authorization URL. Nil means printing
	// it on Output (and, with Browser, starting the platform's browser
	// opener as well). It must not block until the user is done: the
	// redirect is awaited after it returns.
	Open func(authorizationURL string) error
	// Output is where the default Open prints the URL. Nil means
	// os.Stderr.
	Output io.Writer
	// Browser makes the default Open also try the platform's opener
	// (xdg-open, open, or rundll32 on Windows). A failure to start it is
	// reported on Output; the printed URL still works.
	Browser bool
	// Timeout bounds the wait for the redirect, from the moment the
	// listener is up. Zero means DefaultLoopbackTimeout.
	Timeout time.Duration
}

// loopback is a validated LoopbackOptions.
type loopback struct {
	o        LoopbackOptions
	redirect *url.URL
	addrs    []string // where to listen
}

// LoopbackAuthorizer returns an AuthorizeFunc for native applications
// and command-line tools (RFC 8252): for each authorization it listens on
// the host and port of opts.RedirectURL, hands the authorization URL to
// opts.Open, waits (bounded by opts.Timeout and ctx) for one request on
// the redirect path that carries the state of this authorization,
// answers it with a short page telling the user they may close the
// window, stops listening and returns the full redirect URL. The
// Transport then checks iss, state and code. Requests to other paths, or
// with another state or Host, are refused and do not end the wait.
//
// It returns an error when opts.RedirectURL is not a loopback http URL
// with a port. Set Options.RedirectURL to the same URL: an authorization
// URL naming another redirect_uri fails with ErrRedirectMismatch.
func LoopbackAuthorizer(opts LoopbackOptions) (AuthorizeFunc, error) {
	l, err := newLoopback(opts)
	if err != nil {
		return nil, err
	}
	return l.authorize, nil
}

func newLoopback(o LoopbackOptions) (*loopback, error) {
	u, err := url.Parse(o.RedirectURL)
	if err != nil {
		return nil, fmt.Errorf("auth: LoopbackOptions.RedirectURL: %w", err)
	}
	if u.Scheme != "http" || u.User != nil || u.Fragment != "" || u.RawQuery != "" || u.Opaque != "" {
		return nil, fmt.Errorf("auth: LoopbackOptions.RedirectURL %q must be a plain http URL (no userinfo, query or fragment)", o.RedirectURL)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" || port == "0" {
		return nil, fmt.Errorf("auth: LoopbackOptions.RedirectURL %q needs an explicit port", o.RedirectURL)
	}
	var addrs []string
	switch ip := net.ParseIP(host); {
	case strings.EqualFold(host, "localhost"):
		// The browser may resolve localhost to either family.
		addrs = []string{net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
	case ip != nil && ip.IsLoopback():
		addrs = []string{net.JoinHostPort(host, port)}
	default:
		return nil, fmt.Errorf("auth: LoopbackOptions.RedirectURL %q must be on 127.0.0.1, [::1] or localhost", o.RedirectURL)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultLoopbackTimeout
	}
	if o.Output == nil {
		o.Output = os.Stderr
	}
	return &loopback{o: o, redirect: u, addrs: addrs}, nil
}

// listen opens the listeners (for localhost, one family may be missing).
func (l *loopback) listen(ctx context.Context) ([]net.Listener, error) {
	var lc net.ListenConfig
	var lns []net.Listener
	var errs []error
	for _, a := range l.addrs {
		ln, err := lc.Listen(ctx, "tcp", a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return nil, fmt.Errorf("auth: listening for the authorization response on %s: %w", l.redirect.Host, errors.Join(errs...))
	}
	return lns, nil
}

func (l *loopback) authorize(ctx context.Context, authorizationURL string) (*url.URL, error) {
	au, err := url.Parse(authorizationURL)
	if err != nil {
		return nil, fmt.Errorf("auth: authorization URL: %w", err)
	}
	if au.Scheme != "https" && au.Scheme != "http" {
		return nil, fmt.Errorf("auth: authorization URL %q is not http(s)", authorizationURL)
	}
	q := au.Query()
	if ru := q.Get("redirect_uri"); ru != l.o.RedirectURL {
		return nil, fmt.Errorf("%w: %q, listening on %q", ErrRedirectMismatch, ru, l.o.RedirectURL)
	}
	state := q.Get("state")

	ctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	defer cancel()
	lns, err := l.listen(ctx)
	if err != nil {
		return nil, err
	}
	got := make(chan *url.URL, 1)
	var once sync.Once
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.serve(w, r, state, got, &once) }),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       5 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	srv.SetKeepAlivesEnabled(false)
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = srv.Serve(ln)
		}()
	}
	defer func() {
		// Let the page reach the browser, then stop listening.
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer scancel()
		if srv.Shutdown(sctx) != nil {
			_ = srv.Close()
		}
		wg.Wait()
	}()

	open := l.o.Open
	if open == nil {
		open = l.defaultOpen
	}
	if err := open(authorizationURL); err != nil {
		return nil, fmt.Errorf("auth: opening the authorization URL: %w", err)
	}
	select {
	case u := <-got:
		return u, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("auth: waiting for the authorization response on %s: %w", l.o.RedirectURL, context.Cause(ctx))
	}
}

// serve handles one request to the loopback listener: the redirect (the
// first on the redirect path with the expected Host and state) is passed
// on through got; anything else is refused.
func (l *loopback) serve(w http.ResponseWriter, r *http.Request, state string, got chan<- *url.URL, once *sync.Once) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	if r.URL.Path != l.redirect.Path || !strings.EqualFold(r.Host, l.redirect.Host) {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		h.Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || (state != "" && q.Get("state") != state) {
		http.Error(w, "this is not the authorization response this application is waiting for", http.StatusBadRequest)
		return
	}
	first := false
	once.Do(func() {
		first = true
		u := *l.redirect
		u.RawQuery = r.URL.RawQuery
		got <- &u
	})
	if !first {
		http.Error(w, "the authorization response was already received", http.StatusConflict)
		return
	}
	title, msg := "Authorization received", "You may close this window and return to the application."
	if e := q.Get("error"); e != "" {
		if len(e) > 100 {
			e = e[:100]
		}
		title = "Authorization not granted"
		msg = "The authorization server answered " + html.EscapeString(e) + ". You may close this window."
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = fmt.Fprintf(w, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title></head>"+
		"<body><h1>%s</h1><p>%s</p></body></html>\n", title, title, msg)
}

// defaultOpen prints the URL and, with Browser, starts the platform's
// opener.
func (l *loopback) defaultOpen(authorizationURL string) error {
	if _, err := fmt.Fprintf(l.o.Output, "Open this URL in a browser to authorize:\n\n  %s\n\nWaiting for the browser to come back to %s ...\n",
		authorizationURL, l.o.RedirectURL); err != nil {
		return err
	}
	if l.o.Browser {
		if err := startBrowser(authorizationURL); err != nil {
			fmt.Fprintf(l.o.Output, "(could not start a browser: %v)\n", err)
		}
	}
	return nil
}

// browserCommand is the platform's URL opener.
func browserCommand(u string) *exec.Cmd {
	switch runtime.GOOS {
	case "darwin":
		return exec.Command("open", u)
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
	default:
		return exec.Command("xdg-open", u)
	}
}

// startBrowser starts the opener without waiting for the browser; only
// http(s) URLs are handed to it.
func startBrowser(u string) error {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") {
		return fmt.Errorf("refusing to open %q", u)
	}
	cmd := browserCommand(pu.String())
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
