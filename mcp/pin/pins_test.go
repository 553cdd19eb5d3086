package pin

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

func TestPinsRoundTripThroughJSON(t *testing.T) {
	t.Parallel()
	var p Pins
	if err := p.Set(deployTool("Deploys <the> service & more.")); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var q Pins
	if err := json.Unmarshal(b, &q); err != nil {
		t.Fatal(err)
	}
	a, _ := p.Get("deploy")
	c, ok := q.Get("deploy")
	if !ok || a.Digest != c.Digest || string(a.Definition) != string(c.Definition) {
		t.Fatalf("loaded %+v, want %+v", c, a)
	}
	if !strings.HasPrefix(a.Digest, "sha256:") || len(a.Digest) != len("sha256:")+64 {
		t.Fatalf("digest %q", a.Digest)
	}
	if got := q.Names(); len(got) != 1 || got[0] != "deploy" {
		t.Fatalf("names %v", got)
	}
}

func TestLoadingATamperedPinFails(t *testing.T) {
	t.Parallel()
	var p Pins
	if err := p.Set(deployTool("Deploys the service.")); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(&p)
	for name, edit := range map[string]func(string) string{
		"definition edited": func(s string) string { return strings.Replace(s, "Deploys", "Destroys", 1) },
		"digest edited":     func(s string) string { return strings.Replace(s, `"sha256:`, `"sha256:0`, 1) },
		"renamed":           func(s string) string { return strings.Replace(s, `{"tools":{"deploy"`, `{"tools":{"other"`, 1) },
	} {
		q := new(Pins)
		q.Set(&mcp.Tool{Name: "kept", InputSchema: json.RawMessage(`{"type":"object"}`)})
		if err := json.Unmarshal([]byte(edit(string(b))), q); err == nil {
			t.Errorf("%s: loaded without an error", name)
		}
		if _, ok := q.Get("kept"); !ok {
			t.Errorf("%s: a failed load replaced the pins", name)
		}
	}
}

func TestDigestIgnoresLayoutButNotContent(t *testing.T) {
	t.Parallel()
	mk := func(schema string, ann *mcp.ToolAnnotations) string {
		t.Helper()
		p, err := New(&mcp.Tool{Name: "x", Description: "d", InputSchema: json.RawMessage(schema), Annotations: ann})
		if err != nil {
			t.Fatal(err)
		}
		return p.Digest
	}
	base := mk(`{"type":"object","properties":{"a":{"type":"string"}}}`, nil)
	if mk(" {\"properties\": {\"a\": {\"type\": \"string\"}},\n \"type\": \"object\"}", nil) != base {
		t.Error("white space and member order changed the digest")
	}
	if mk(`{"type":"object","properties":{"a":{"type":"string"}}}`, &mcp.ToolAnnotations{}) != base {
		t.Error("empty annotations changed the digest")
	}
	if mk(`{"type":"object","properties":{"a":{"type":"number"}}}`, nil) == base {
		t.Error("a schema change kept the digest")
	}
	if mk(`{"type":"object","properties":{"a":{"type":"string"}}}`, &mcp.ToolAnnotations{ReadOnlyHint: ptr(true)}) == base {
		t.Error("an annotation kept the digest")
	}
}

// A tool defined in Go (a schema as a map) pins as the same tool listed by
// a server, so that a host can pin from its own definitions.
func TestGoDefinitionPinsAsTheListedTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil)
	local := deployTool("Deploys the service.")
	local.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"env": map[string]any{"type": "string"}}}
	if err := f.guard.Pins().Set(local); err != nil {
		t.Fatal(err)
	}
	if err := f.call(); err != nil {
		t.Fatal(err)
	}
}

func TestDiffKeepsRuneBoundaries(t *testing.T) {
	t.Parallel()
	old := strings.Repeat("é", 300) + "A" + strings.Repeat("ü", 300)
	cur := strings.Repeat("é", 300) + "B" + strings.Repeat("ü", 300)
	e := &ChangeError{Tool: "x", Old: &mcp.Tool{Name: "x", Description: old}, New: &mcp.Tool{Name: "x", Description: cur}, Fields: []string{"description"}}
	d := e.Diff()
	if !utf8.ValidString(d) || !strings.Contains(d, "- …é") || !strings.Contains(d, "éAü") || !strings.Contains(d, "éBü") {
		t.Fatalf("a rune was cut, or the change is not shown: %q", d)
	}
	if len(d) > 2*(2*diffContext+20)+40 {
		t.Fatalf("the diff kept %d bytes of a one-byte change", len(d))
	}
}
