package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// The raw baseline: a bare net/http handler and client (and a bare line
// loop on the pipe) exchanging the same 2026-07-28 JSON-RPC messages,
// encoded and decoded with encoding/json into fixed structs. It checks
// only what it needs (method, version header and _meta agree) and does
// no schema validation, sealing or dispatch: the floor an SDK's wire
// cost can be compared with.

type rawImpl struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type rawClientMeta struct {
	ProtocolVersion    string `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities struct {
		Elicitation struct {
			Form struct{} `json:"form"`
		} `json:"elicitation"`
	} `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo rawImpl `json:"io.modelcontextprotocol/clientInfo"`
}

type rawNameContent struct {
	Name string `json:"name"`
}

type rawElicitResult struct {
	Action  string          `json:"action"`
	Content *rawNameContent `json:"content,omitempty"`
}

type rawParams struct {
	Name      string `json:"name"`
	Arguments struct {
		Text string `json:"text"`
	} `json:"arguments"`
	InputResponses map[string]rawElicitResult `json:"inputResponses,omitempty"`
	RequestState   string                     `json:"requestState,omitempty"`
	Meta           rawClientMeta              `json:"_meta"`
}

type rawRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  rawParams       `json:"params"`
}

type rawContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type rawElicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

type rawInputRequest struct {
	Method string          `json:"method"`
	Params rawElicitParams `json:"params"`
}

type rawServerMeta struct {
	ServerInfo rawImpl `json:"io.modelcontextprotocol/serverInfo"`
}

type rawResult struct {
	ResultType    string                     `json:"resultType"`
	Content       []rawContent               `json:"content,omitempty"`
	InputRequests map[string]rawInputRequest `json:"inputRequests,omitempty"`
	RequestState  string                     `json:"requestState,omitempty"`
	Meta          *rawServerMeta             `json:"_meta,omitempty"`
}

type rawError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rawResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *rawResult      `json:"result,omitempty"`
	Error   *rawError       `json:"error,omitempty"`
}

var (
	rawNameSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)
	rawServerInfo = &rawServerMeta{ServerInfo: rawImpl{Name: "bench", Version: "1"}}
)

// rawServe answers one decoded request.
func rawServe(req *rawRequest) *rawResponse {
	res := &rawResponse{JSONRPC: "2.0", ID: req.ID}
	switch {
	case req.Method != "tools/call":
		res.Error = &rawError{Code: -32601, Message: "Method not found"}
	case req.Params.Meta.ProtocolVersion != protocolVersion:
		res.Error = &rawError{Code: -32022, Message: "Unsupported protocol version"}
	case req.Params.Name == "echo":
		res.Result = &rawResult{ResultType: "complete", Content: []rawContent{{Type: "text", Text: req.Params.Arguments.Text}}, Meta: rawServerInfo}
	case req.Params.Name == "ask":
		if r, ok := req.Params.InputResponses["name"]; ok && r.Action == "accept" && r.Content != nil {
			res.Result = &rawResult{ResultType: "complete", Content: []rawContent{{Type: "text", Text: "hello " + r.Content.Name}}, Meta: rawServerInfo}
			break
		}
		res.Result = &rawResult{
			ResultType: "input_required",
			InputRequests: map[string]rawInputRequest{"name": {
				Method: "elicitation/create",
				Params: rawElicitParams{Mode: "form", Message: askMessage, RequestedSchema: rawNameSchema},
			}},
			RequestState: "step=1",
			Meta:         rawServerInfo,
		}
	default:
		res.Error = &rawError{Code: -32602, Message: "Unknown tool"}
	}
	return res
}

// rawHandler is the bare net/http handler.
var rawHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	var req rawRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Header.Get("Mcp-Protocol-Version") != req.Params.Meta.ProtocolVersion || r.Header.Get("Mcp-Method") != req.Method {
		http.Error(w, "header mismatch", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rawServe(&req))
})

// rawCall is the client side of one call: it builds the requests of
// every leg and interprets the results.
type rawCall struct {
	req rawRequest
}

func newRawCall(id int64, tool, text string) *rawCall {
	c := &rawCall{req: rawRequest{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: "tools/call"}}
	c.req.Params.Name = tool
	c.req.Params.Arguments.Text = text
	c.req.Params.Meta.ProtocolVersion = protocolVersion
	c.req.Params.Meta.ClientInfo = rawImpl{Name: "bench-client", Version: "1"}
	return c
}

// next interprets res: the text of a complete result, or done=false
// with the request of the next leg prepared.
func (c *rawCall) next(res *rawResponse) (text string, done bool, err error) {
	if res.Error != nil {
		return "", true, fmt.Errorf("error %d: %s", res.Error.Code, res.Error.Message)
	}
	if res.Result == nil {
		return "", true, errors.New("no result")
	}
	switch res.Result.ResultType {
	case "complete":
		if len(res.Result.Content) == 0 {
			return "", true, errors.New("no content")
		}
		return res.Result.Content[0].Text, true, nil
	case "input_required":
		if c.req.Params.InputResponses != nil {
			return "", true, errors.New("asked twice")
		}
		c.req.Params.InputResponses = make(map[string]rawElicitResult, len(res.Result.InputRequests))
		for k, ir := range res.Result.InputRequests {
			if ir.Method != "elicitation/create" {
				return "", true, fmt.Errorf("cannot answer %s", ir.Method)
			}
			c.req.Params.InputResponses[k] = rawElicitResult{Action: "accept", Content: &rawNameContent{Name: answerName}}
		}
		c.req.Params.RequestState = res.Result.RequestState
		return "", false, nil
	}
	return "", true, fmt.Errorf("resultType %q", res.Result.ResultType)
}

type rawHTTPCaller struct {
	url string
	hc  *http.Client
	ids atomic.Int64
}

func (c *rawHTTPCaller) call(ctx context.Context, tool, text string) (string, error) {
	rc := newRawCall(c.ids.Add(1), tool, text)
	for {
		body, err := json.Marshal(&rc.req)
		if err != nil {
			return "", err
		}
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
		if err != nil {
			return "", err
		}
		r.Header["Content-Type"] = []string{"application/json"}
		r.Header["Accept"] = []string{"application/json, text/event-stream"}
		r.Header["Mcp-Protocol-Version"] = []string{protocolVersion}
		r.Header["Mcp-Method"] = []string{"tools/call"}
		r.Header["Mcp-Name"] = []string{tool}
		resp, err := c.hc.Do(r)
		if err != nil {
			return "", err
		}
		var res rawResponse
		err = json.NewDecoder(resp.Body).Decode(&res)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "", fmt.Errorf("status %d", resp.StatusCode)
		}
		if err != nil {
			return "", err
		}
		text, done, err := rc.next(&res)
		if done {
			return text, err
		}
	}
}

func (c *rawHTTPCaller) close() error { c.hc.CloseIdleConnections(); return nil }

// rawPipeCaller writes one request line and reads one response line at a
// time.
type rawPipeCaller struct {
	mu  sync.Mutex
	w   io.WriteCloser
	r   *bufio.Reader
	rc  io.Closer
	ids int64
}

func (c *rawPipeCaller) call(ctx context.Context, tool, text string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids++
	rc := newRawCall(c.ids, tool, text)
	for {
		line, err := json.Marshal(&rc.req)
		if err != nil {
			return "", err
		}
		if _, err := c.w.Write(append(line, '\n')); err != nil {
			return "", err
		}
		in, err := c.r.ReadSlice('\n')
		if err != nil {
			return "", err
		}
		var res rawResponse
		if err := json.Unmarshal(in, &res); err != nil {
			return "", err
		}
		text, done, err := rc.next(&res)
		if done {
			return text, err
		}
	}
}

func (c *rawPipeCaller) close() error { return errors.Join(c.w.Close(), c.rc.Close()) }

var rawSubject = subject{
	name: "raw",
	note: "net/http handler + http.Client, encoding/json into fixed structs; a bare line loop on the pipe",
	handler: func(tb testing.TB) http.Handler {
		return rawHandler
	},
	httpClient: func(tb testing.TB, url string, hc *http.Client) caller {
		return &rawHTTPCaller{url: url, hc: hc}
	},
	servePipe: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) {
		go func() {
			defer w.Close()
			br := bufio.NewReaderSize(r, 64<<10)
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				var req rawRequest
				if err := json.Unmarshal(line, &req); err != nil {
					return
				}
				out, err := json.Marshal(rawServe(&req))
				if err != nil {
					return
				}
				if _, err := w.Write(append(out, '\n')); err != nil {
					return
				}
			}
		}()
	},
	pipeClient: func(tb testing.TB, r io.ReadCloser, w io.WriteCloser) caller {
		return &rawPipeCaller{w: w, r: bufio.NewReaderSize(r, 64<<10), rc: r}
	},
}
