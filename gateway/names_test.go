package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

func TestAggregatedNamesAreAtMost64CharactersAndUnique(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 70)
	entries := []entryKey{
		{"a", "search"},       // natural
		{"a", "b__c"},         // a__b__c: collides with b's below
		{"a__b", "c"},         // a__b__c
		{"a", long},           // too long
		{"a", long + "y"},     // too long, same 55-byte head
		{"a", "with space"},   // not a valid name
		{"a", "with_space"},   // a__with_space: natural, and not confused with the above
		{"a", "ok-name.v1_2"}, // natural
	}
	prefixes := map[string]string{"a": "a", "a__b": "a__b"}
	names := assignNames(entries, prefixes, DefaultSeparator)
	seen := map[string]entryKey{}
	for _, e := range entries {
		n, ok := names[e]
		if !ok {
			t.Fatalf("%v has no name", e)
		}
		if len(n) > MaxNameLength || !safeName(n) {
			t.Errorf("%v: %q is not a valid name of at most 64 bytes", e, n)
		}
		if other, dup := seen[n]; dup {
			t.Errorf("%v and %v share %q", e, other, n)
		}
		seen[n] = e
	}
	for e, want := range map[entryKey]string{{"a", "search"}: "a__search", {"a", "with_space"}: "a__with_space", {"a", "ok-name.v1_2"}: "a__ok-name.v1_2"} {
		if names[e] != want {
			t.Errorf("%v: %q, want %q", e, names[e], want)
		}
	}
	for _, e := range []entryKey{{"a", "b__c"}, {"a__b", "c"}, {"a", long}, {"a", "with space"}} {
		if names[e] == prefixes[e.upstream]+DefaultSeparator+e.name {
			t.Errorf("%v kept its natural name %q", e, names[e])
		}
	}
	// Deterministic: the same entries in another order get the same names.
	rev := slices.Clone(entries)
	slices.Reverse(rev)
	again := assignNames(rev, prefixes, DefaultSeparator)
	for _, e := range entries {
		if again[e] != names[e] {
			t.Errorf("%v: %q then %q", e, names[e], again[e])
		}
	}
	// The shortened form depends on the entry alone.
	if got := hashedName("a", "a", "__", long); got != names[entryKey{"a", long}] {
		t.Errorf("hashed name %q, assigned %q", got, names[entryKey{"a", long}])
	}
}

func TestRewrittenURIsAreReversible(t *testing.T) {
	t.Parallel()
	for _, uri := range []string{"file:///shared.txt", "https://x/y?z=1&w=2#f", "weird uri ünï"} {
		up, orig, ok := parseRewrittenURI(rewriteURI("files", uri))
		if !ok || up != "files" || orig != uri {
			t.Errorf("%q: %q %q %v", uri, up, orig, ok)
		}
	}
	for _, bad := range []string{"file:///x", "roundtrip-gateway://", "roundtrip-gateway://a b/?uri=x", "roundtrip-gateway://a/?uri=%zz"} {
		if _, _, ok := parseRewrittenURI(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// Through a real gateway: two upstreams with the same tool names and a
// shared resource URI, prefixes that collide, and a name past 64.
func TestCollidingAndLongNamesThroughTheGateway(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("long", 20)
	a := upstreamServer("a")
	mcp.AddTypedTool(a, &mcp.Tool{Name: long}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
		return mcp.TextResult("long one"), nil
	})
	mcp.AddTypedTool(a, &mcp.Tool{Name: "x__echo"}, func(ctx context.Context, req *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, error) {
		return mcp.TextResult("a's x__echo"), nil
	})
	g, url := startGateway(t, []Upstream{
		{Name: "a", URL: serveModern(t, a), Prefix: "p"},
		{Name: "b", URL: serveModern(t, upstreamServer("b")), Prefix: "p__x"}, // p__x__echo twice
	}, nil)
	c := downstream(t, url, "alice", mcp.ModeAuto, nil)
	names := toolNames(t, c)
	var longName string
	for _, n := range names {
		if len(n) > MaxNameLength {
			t.Errorf("%q is longer than 64", n)
		}
		if strings.HasPrefix(n, "p__long") {
			longName = n
		}
	}
	if slices.Contains(names, "p__x__echo") {
		t.Errorf("the colliding name was kept: %v", names)
	}
	for _, want := range []string{"p__echo", "p__x__ask"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s missing: %v", want, names)
		}
	}
	res, err := c.CallTool(context.Background(), longName, nil, nil)
	if err != nil || resultText(t, res) != "long one" {
		t.Fatalf("%s: %v %v", longName, res, err)
	}
	for _, up := range []string{"a", "b"} {
		want := "a's x__echo"
		orig := "x__echo"
		if up == "b" {
			want, orig = "b:", "echo"
		}
		agg := hashedName(up, g.byName[up].prefix(), DefaultSeparator, orig)
		var args any
		if up == "b" {
			args = map[string]any{"text": ""}
		}
		res, err := c.CallTool(context.Background(), agg, args, nil)
		if err != nil || resultText(t, res) != want {
			t.Errorf("%s (%s of %s): %v %v", agg, orig, up, res, err)
		}
	}
	// The shared URI is rewritten for both, each readable; the others stay.
	uris := map[string]bool{}
	for r, err := range c.Resources(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		uris[r.URI] = true
	}
	if uris["file:///shared.txt"] || !uris["file:///a.txt"] || !uris["file:///b.txt"] {
		t.Fatalf("resources %v", uris)
	}
	rr, err := c.ReadResource(context.Background(), rewriteURI("b", "file:///shared.txt"), nil)
	if err != nil || rr.Contents[0].Text != "b shared" {
		t.Fatalf("rewritten read: %v %v", rr, err)
	}
	rr, err = c.ReadResource(context.Background(), "file:///a.txt", nil)
	if err != nil || rr.Contents[0].Text != "a own" {
		t.Fatalf("read: %v %v", rr, err)
	}
	pr, err := c.GetPrompt(context.Background(), "p__x__greet", nil, nil)
	if err != nil || textOf(pr.Messages[0].Content) != "b says hello" {
		t.Fatalf("prompt: %v %v", pr, err)
	}
}
