package mcp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// HTTPClientOptions configure the Streamable HTTP client transport. The
// zero value is valid.
type HTTPClientOptions struct {
	// HTTPClient sends the requests. Nil means a client with no overall
	// timeout (bound calls with their context or
	// ClientOptions.RequestTimeout instead: an SSE response may
	// legitimately stay open for long).
	HTTPClient *http.Client
	// Header holds extra headers sent with every request, such as
	// Authorization. The MCP headers are always set by the transport.
	Header http.Header
	// MaxMessageBytes bounds a JSON response body and each SSE event.
	// Zero means DefaultMaxMessageBytes (4 MiB); a larger message fails
	// the call with ErrMessageTooLarge.
	MaxMessageBytes int
}

// NewHTTPClientTransport returns a Streamable HTTP transport for the MCP
// endpoint url. Every request is its own POST with the headers
// MCP-Protocol-Version, Mcp-Method, Mcp-Name (tools/call, prompts/get,
// resources/read) and Mcp-Param-* (tools/call arguments the tool's
// inputSchema marks with x-mcp-header, learned from tools/list). The
// response may be a JSON body or an SSE stream: the stream is read until
// the event carrying the response; notifications before it go to the
// call's callbacks; comment lines are ignored. Cancelling a call's
// context closes its stream, which is how HTTP cancels a request.
func NewHTTPClientTransport(url string, opts *HTTPClientOptions) ClientTransport {
	t := &httpClientTransport{url: url, max: DefaultMaxMessageBytes}
	if opts != nil {
		t.hc = opts.HTTPClient
		t.extra = opts.Header
		if opts.MaxMessageBytes > 0 {
			t.max = opts.MaxMessageBytes
		}
	}
	if t.hc == nil {
		t.hc = &http.Client{}
	}
	return t
}

type httpClientTransport struct {
	url   string
	hc    *http.Client
	extra http.Header
	max   int
}

var acceptBoth = []string{"application/json, text/event-stream"}

func (t *httpClientTransport) mirrorsHeaders() bool      { return true }
func (t *httpClientTransport) releasesBody() bool        { return false }
func (t *httpClientTransport) bind(func(string, []byte)) {}

// Close closes idle connections of the HTTP client.
func (t *httpClientTransport) Close() error {
	t.hc.CloseIdleConnections()
	return nil
}

func (t *httpClientTransport) roundTrip(ctx context.Context, r *wireRequest) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(r.body))
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	h := req.Header
	for k, v := range t.extra {
		h[k] = v
	}
	h["Content-Type"] = ctJSON
	h["Accept"] = acceptBoth
	h.Set(HeaderProtocolVersion, r.version)
	h.Set(HeaderMethod, r.method)
	if r.hasTarget {
		h.Set(HeaderName, EncodeHeaderValue(r.target))
	}
	for _, p := range r.headers {
		h.Set(HeaderParamPrefix+p.name, p.value)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("mcp: %s: %w", r.method, err)
	}
	defer resp.Body.Close()
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var res []byte
	switch {
	case ct == "text/event-stream" && resp.StatusCode == http.StatusOK:
		res, err = t.readSSE(resp.Body, r)
	case ct == "application/json":
		res, err = t.readJSON(resp, r)
	default:
		err = statusError(resp, t.max)
		if resp.StatusCode/100 == 2 {
			err = invalidResponse(r.method, "HTTP %d response with Content-Type %q", resp.StatusCode, ct)
		}
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return res, err
}

func statusError(resp *http.Response, max int) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, int64(min(512, max))))
	return &HTTPStatusError{StatusCode: resp.StatusCode, Body: b}
}

// readJSON reads a JSON body holding exactly one response.
func (t *httpClientTransport) readJSON(resp *http.Response, r *wireRequest) ([]byte, error) {
	var body []byte
	if n := resp.ContentLength; n > int64(t.max) {
		return nil, &InvalidResponseError{Method: r.method, Err: ErrMessageTooLarge}
	} else if n > 0 {
		body = make([]byte, n)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, fmt.Errorf("mcp: %s: reading the response: %w", r.method, err)
		}
	} else {
		var err error
		body, err = io.ReadAll(io.LimitReader(resp.Body, int64(t.max)+1))
		if err != nil {
			return nil, fmt.Errorf("mcp: %s: reading the response: %w", r.method, err)
		}
		if len(body) > t.max {
			return nil, &InvalidResponseError{Method: r.method, Err: ErrMessageTooLarge}
		}
	}
	msg, e := jsonrpc.Decode(body)
	if e != nil || !msg.IsResponse() {
		if resp.StatusCode != http.StatusOK {
			return nil, &HTTPStatusError{StatusCode: resp.StatusCode, Body: body[:min(len(body), 512)]}
		}
		if e != nil {
			return nil, invalidResponse(r.method, "%s", e.Message)
		}
		return nil, invalidResponse(r.method, "the JSON body is not a response")
	}
	if id, ok := idOf(msg.ID); ok && id != r.id || !ok && msg.Error == nil {
		return nil, invalidResponse(r.method, "the response is for id %s, not %d", msg.ID.Raw(), r.id)
	}
	// An error without id answers a request the server could not read.
	return responseOf(r.method, &msg)
}

// readSSE reads an SSE stream until the event carrying the response to
// r, passing notifications to r.notify.
func (t *httpClientTransport) readSSE(body io.Reader, r *wireRequest) ([]byte, error) {
	br := bufio.NewReaderSize(body, 4096)
	var data []byte
	hasData := false
	for {
		line, _, err := readBoundedLine(br, t.max)
		if errors.Is(err, errLineTooLong) {
			return nil, &InvalidResponseError{Method: r.method, Err: ErrMessageTooLarge}
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		switch {
		case len(line) == 0:
			if hasData {
				res, done, derr := t.event(data, r)
				if done {
					return res, derr
				}
				data, hasData = nil, false
			}
		case line[0] == ':': // comment (keep-alive)
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			if string(field) == "data" {
				if len(data)+len(value)+1 > t.max {
					return nil, &InvalidResponseError{Method: r.method, Err: ErrMessageTooLarge}
				}
				if hasData {
					data = append(data, '\n')
				}
				data = append(data, value...)
				hasData = true
			}
		}
		if err != nil {
			if err == io.EOF {
				if hasData {
					if res, done, derr := t.event(data, r); done {
						return res, derr
					}
				}
				return nil, invalidResponse(r.method, "the SSE stream ended without the response")
			}
			return nil, fmt.Errorf("mcp: %s: reading the SSE stream: %w", r.method, err)
		}
	}
}

// event handles one SSE event; done is true when it carried the
// response to r (or was malformed).
func (t *httpClientTransport) event(data []byte, r *wireRequest) (res []byte, done bool, err error) {
	msg, e := jsonrpc.Decode(data)
	if e != nil {
		return nil, true, invalidResponse(r.method, "SSE event: %s", e.Message)
	}
	switch {
	case msg.IsNotification():
		if r.notify != nil {
			r.notify(msg.Method, msg.Params)
		}
		return nil, false, nil
	case msg.IsResponse():
		if id, ok := idOf(msg.ID); ok && id == r.id || !ok && msg.Error != nil {
			res, err := responseOf(r.method, &msg)
			return res, true, err
		}
	}
	// Another request's response, or a server→client request (none in
	// the modern era): not ours, ignored.
	return nil, false, nil
}
