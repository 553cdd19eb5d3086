package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Quote is the structured result of the "quote" tool of these examples.
type Quote struct {
	Symbol string  `json:"symbol"`
	Price  float64 `json:"price"`
}

// quoteServer serves a typed tool "quote" (its outputSchema inferred
// from Quote) on loopback HTTP and returns a Client for it.
func quoteServer() (*mcp.Client, func()) {
	srv := mcp.NewServer(mcp.Implementation{Name: "quotes", Version: "1"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "quote"}, func(ctx context.Context, r *mcp.CallToolRequest, in struct {
		Symbol string `json:"symbol"`
	}) (Quote, error) {
		return Quote{Symbol: in.Symbol, Price: 187.5}, nil
	})
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), nil)
	return c, func() { c.Close(); ts.Close() }
}

// Decoding the structuredContent of a result into a Go type.
func ExampleStructuredContent() {
	client, done := quoteServer()
	defer done()
	res, err := client.CallTool(context.Background(), "quote", map[string]string{"symbol": "ACME"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// #region structured-content
	q, err := mcp.StructuredContent[Quote](res)
	if err != nil {
		fmt.Println(err)
		return
	}
	// #endregion structured-content
	fmt.Printf("%s at %.2f\n", q.Symbol, q.Price)

	// A failed tool is a *ToolError, not a zero value.
	_, err = mcp.StructuredContent[Quote](mcp.ErrorResult("market closed"))
	var te *mcp.ToolError
	fmt.Println(errors.As(err, &te), err)
	// Output:
	// ACME at 187.50
	// true mcp: the tool failed: market closed
}

// Calling a tool and decoding its result in one step. Listing the tools
// first lets the Client check each result against the tool's
// outputSchema (on by default; ClientOptions.SkipOutputValidation turns
// it off).
func ExampleCallToolAs() {
	client, done := quoteServer()
	defer done()
	ctx := context.Background()
	for _, err := range client.Tools(ctx) {
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	// #region call-tool-as
	q, err := mcp.CallToolAs[Quote](ctx, client, "quote", map[string]string{"symbol": "INIT"}, nil)
	if err != nil {
		fmt.Println(err) // a failed tool is a *ToolError
		return
	}
	// #endregion call-tool-as
	fmt.Println(q.Symbol, q.Price)
	// Output:
	// INIT 187.5
}

// A structured result that breaks the tool's outputSchema is an error
// naming the JSON pointer of the failing value.
func ExampleOutputValidationError() {
	srv := mcp.NewServer(mcp.Implementation{Name: "orders", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"qty":{"type":"integer","minimum":1}}}}}}`)
	srv.AddTool(&mcp.Tool{Name: "order", OutputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: json.RawMessage(`{"items":[{"qty":2},{"qty":0}]}`)}, nil
	})
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()
	client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), nil)
	defer client.Close()
	ctx := context.Background()
	if _, err := client.ListTools(ctx, nil); err != nil {
		fmt.Println(err)
		return
	}
	_, err := client.CallTool(ctx, "order", nil, nil)
	var verr *mcp.OutputValidationError
	if errors.As(err, &verr) {
		fmt.Println(verr.Pointer)
		fmt.Println(verr.Reason)
		fmt.Println(errors.Is(err, mcp.ErrInvalidOutput))
	}
	// Output:
	// /items/1/qty
	// minimum: 0 is less than 1
	// true
}

// Reading an elicitation's requestedSchema as a form to render.
func ExampleElicitRequest_Form() {
	req := &mcp.ElicitRequest{
		Message: "Where should we ship?",
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{
			"email":{"type":"string","format":"email","title":"E-mail"},
			"speed":{"type":"string","oneOf":[{"const":"std","title":"Standard"},{"const":"exp","title":"Express"}],"default":"std"},
			"gift":{"type":"boolean","title":"Gift wrap"}},
			"required":["email"]}`),
	}
	form, err := req.Form()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range form.Fields {
		fmt.Printf("%s (%s) required=%v", f.Name, f.Type, f.Required)
		if f.Format != "" {
			fmt.Printf(" format=%s", f.Format)
		}
		for _, o := range f.Options {
			fmt.Printf(" [%s: %s]", o.Value, o.Title)
		}
		if f.Default != nil {
			fmt.Printf(" default=%v", f.Default)
		}
		fmt.Println()
	}
	// Output:
	// email (string) required=true format=email
	// speed (string) required=false [std: Standard] [exp: Express] default=std
	// gift (boolean) required=false
}

// Building answers: accepted with a map or a struct (its members read
// back as an answer's content is read: numbers as int64 or float64),
// declined, cancelled.
func ExampleElicitAnswer() {
	type shipping struct {
		Email string   `json:"email"`
		Count int      `json:"count"`
		Tags  []string `json:"tags"`
	}
	r, err := mcp.ElicitAnswer(mcp.ElicitAccept, shipping{Email: "ada@example.com", Count: 2, Tags: []string{"fragile"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %T %v %v\n", r.Action, r.Content["count"], r.Content["count"], r.Content["tags"])
	r, _ = mcp.ElicitAnswer(mcp.ElicitAccept, map[string]any{"email": "ada@example.com", "gift": true})
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
	r, _ = mcp.ElicitAnswer(mcp.ElicitDecline, nil)
	b, _ = json.Marshal(r)
	fmt.Println(string(b))

	_, err = mcp.ElicitAnswer(mcp.ElicitAccept, []string{"not", "an", "object"})
	fmt.Println(err)
	// Output:
	// accept int64 2 [fragile]
	// {"action":"accept","content":{"email":"ada@example.com","gift":true}}
	// {"action":"decline"}
	// mcp: ElicitAnswer: []string does not encode to a JSON object
}

// Answering a pending call in manual mode without writing JSON by hand.
func ExampleInputResponses_SetElicit() {
	srv := mcp.NewServer(mcp.Implementation{Name: "provisioner", Version: "1.0.0"}, nil)
	mcp.AddTypedTool(srv, &mcp.Tool{Name: "provision"}, func(ctx context.Context, req *mcp.CallToolRequest, in ProvisionArgs) (*mcp.CallToolResult, error) {
		region, err := mcp.Elicit[Region](ctx, "Which region?", mcp.WithKey("region"))
		if err != nil {
			return nil, err
		}
		r, err := region.Value()
		if err != nil {
			return nil, err
		}
		return mcp.TextResult(in.Name + " in " + r.Region), nil
	})
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: json.RawMessage(`{}`)}}
	client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), &mcp.ClientOptions{Capabilities: caps})
	defer client.Close()
	ctx := context.Background()

	_, err := client.CallTool(ctx, "provision", ProvisionArgs{Name: "orders"}, &mcp.CallOptions{Manual: true})
	var pending *mcp.PendingCallError
	if !errors.As(err, &pending) {
		fmt.Println(err)
		return
	}
	var answers mcp.InputResponses // SetElicit makes the map
	answer, _ := mcp.ElicitAnswer(mcp.ElicitAccept, map[string]any{"region": "eu-west-1"})
	if err := answers.SetElicit("region", answer); err != nil {
		fmt.Println(err)
		return
	}
	res, err := client.Resume(ctx, pending.Call, answers, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.(*mcp.CallToolResult).Content[0].(*mcp.TextContent).Text)
	// Output:
	// orders in eu-west-1
}

// The answers to a sampling request and to a roots request, encoded as
// the automatic path sends them.
func ExampleInputResponses_SetSampling() {
	var answers mcp.InputResponses
	if err := answers.SetSampling("summary", &mcp.CreateMessageResult{
		Role: mcp.RoleAssistant, Model: "small-1", Content: []mcp.Content{&mcp.TextContent{Text: "All good."}},
	}); err != nil {
		fmt.Println(err)
		return
	}
	if err := answers.SetRoots("where", &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///src", Name: "src"}}}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(answers["summary"]))
	fmt.Println(string(answers["where"]))
	// Output:
	// {"role":"assistant","content":{"type":"text","text":"All good."},"model":"small-1"}
	// {"roots":[{"uri":"file:///src","name":"src"}]}
}

// An empty list of roots is sent as [], not null.
func ExampleInputResponses_SetRoots() {
	var answers mcp.InputResponses
	if err := answers.SetRoots("where", &mcp.ListRootsResult{}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(answers["where"]))
	// Output:
	// {"roots":[]}
}

// A server that says its tool list stays fresh for a minute: the second
// ListTools is answered from the Client's cache, and WithoutCache sends
// the request anyway. Several Clients may share one store.
func ExampleWithoutCache() {
	srv := mcp.NewServer(mcp.Implementation{Name: "cached", Version: "1"}, &mcp.ServerOptions{ListTTL: time.Minute, CacheScope: mcp.CachePublic})
	srv.AddTool(&mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest) (mcp.ToolResponse, error) {
		return mcp.TextResult("ok"), nil
	})
	var lists atomic.Int32
	h := mcp.NewHTTPHandler(srv, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(mcp.HeaderMethod) == mcp.MethodToolsList {
			lists.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	defer ts.Close()
	store := mcp.NewMemoryCache(256, 1<<20)
	client := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL, nil), &mcp.ClientOptions{Cache: mcp.CacheOptions{Store: store}})
	defer client.Close()
	ctx := context.Background()
	for _, cx := range []context.Context{ctx, ctx, mcp.WithoutCache(ctx)} {
		if _, err := client.ListTools(cx, nil); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println("tools/list requests sent:", lists.Load())
	fmt.Println("entries held:", store.Entries())
	// Output:
	// tools/list requests sent: 2
	// entries held: 1
}
