package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the tests compute")

const questionKeysGolden = "testdata/question-keys.golden"

// The forms of the golden question keys. Their names never reach the
// wire: only the schemas derived from their fields do.
type (
	goldenName struct {
		Name string `json:"name"`
	}
	goldenDescribed struct {
		Name string `json:"name" jsonschema:"your full name"`
	}
	goldenOptional struct {
		Nickname string `json:"nickname,omitempty"`
	}
	goldenTagged struct {
		Email  string `json:"email" mcp:"title=E-mail,format=email"`
		Site   string `json:"site,omitempty" mcp:"format=uri"`
		Born   string `json:"born,omitempty" mcp:"format=date"`
		At     string `json:"at,omitempty" mcp:"format=date-time"`
		Region string `json:"region" jsonschema:"cloud region" mcp:"title=Region,enum=eu-west-1|us-east-1|ap-south-1"`
	}
	goldenKinds struct {
		Count   int      `json:"count"`
		Ratio   float64  `json:"ratio"`
		OK      bool     `json:"ok"`
		Untyped string   // no json tag: the field name
		Skipped string   `json:"-"`
		Tags    []string `json:"tags,omitempty" mcp:"enum=red|green|blue"`
	}
	goldenAB struct {
		A string `json:"a"`
		B string `json:"b"`
	}
	goldenBA struct {
		B string `json:"b"`
		A string `json:"a"`
	}
)

// A question as a handler asks it; the error is all the test looks at.
type goldenAsk func(ctx context.Context) error

func askElicit[T any](message string, opts ...AskOption) goldenAsk {
	return func(ctx context.Context) error { _, err := Elicit[T](ctx, message, opts...); return err }
}

func askForm(message, schema string, opts ...AskOption) goldenAsk {
	return func(ctx context.Context) error {
		_, err := ElicitForm(ctx, message, []byte(schema), opts...)
		return err
	}
}

func askURL(message, url string, opts ...AskOption) goldenAsk {
	return func(ctx context.Context) error { _, err := ElicitURL(ctx, message, url, opts...); return err }
}

func askSample(r *CreateMessageRequest, opts ...AskOption) goldenAsk {
	return func(ctx context.Context) error { _, err := Sample(ctx, r, opts...); return err }
}

func askRoots(opts ...AskOption) goldenAsk {
	return func(ctx context.Context) error { _, err := ListRoots(ctx, opts...); return err }
}

func userSays(text string) []SamplingMessage {
	return []SamplingMessage{{Role: RoleUser, Content: []Content{&TextContent{Text: text}}}}
}

func ptrFloat(f float64) *float64 { return &f }

// questionKeyCases are the questions whose keys are pinned; each case is
// one handler run, so identical questions within a case are numbered.
var questionKeyCases = []struct {
	name string
	asks []goldenAsk
}{
	{"elicit/string", []goldenAsk{askElicit[goldenName]("What is your name?")}},
	{"elicit/string-other-message", []goldenAsk{askElicit[goldenName]("Your name, please?")}},
	{"elicit/described", []goldenAsk{askElicit[goldenDescribed]("What is your name?")}},
	{"elicit/optional", []goldenAsk{askElicit[goldenOptional]("A nickname?")}},
	{"elicit/title-format-enum", []goldenAsk{askElicit[goldenTagged]("Where can we reach you?")}},
	{"elicit/kinds-and-list", []goldenAsk{askElicit[goldenKinds]("Counts?")}},
	{"elicit/fields-a-b", []goldenAsk{askElicit[goldenAB]("Two fields?")}},
	{"elicit/fields-b-a", []goldenAsk{askElicit[goldenBA]("Two fields?")}},
	{"form/name", []goldenAsk{askForm("What is your name?",
		`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}},
	{"form/name-reordered-spaced", []goldenAsk{askForm("What is your name?",
		`{ "required": ["name"], "properties": { "name": { "type": "string" } }, "type": "object" }`)}},
	{"form/defaults-titled-enums-limits", []goldenAsk{askForm("Configure the database",
		`{"type":"object","properties":{`+
			`"engine":{"type":"string","title":"Engine","oneOf":[{"const":"pg","title":"PostgreSQL"},{"const":"my","title":"MySQL"}],"default":"pg"},`+
			`"size":{"type":"integer","minimum":10,"maximum":500,"default":20},`+
			`"label":{"type":"string","minLength":1,"maxLength":32,"pattern":"^[a-z][a-z0-9-]*$"},`+
			`"zones":{"type":"array","items":{"type":"string","enum":["a","b","c"]},"minItems":1,"maxItems":2},`+
			`"backup":{"type":"boolean","default":true}},`+
			`"required":["engine","label"]}`)}},
	{"url/consent", []goldenAsk{askURL("Sign in to continue", "https://auth.example.com/login?state=s1")}},
	{"url/other-url", []goldenAsk{askURL("Sign in to continue", "https://auth.example.com/login?state=s2")}},
	{"sample/plain", []goldenAsk{askSample(&CreateMessageRequest{MaxTokens: 50, Messages: userSays("Write a haiku about autumn.")})}},
	{"sample/everything-but-tools", []goldenAsk{askSample(&CreateMessageRequest{
		MaxTokens: 200, Messages: []SamplingMessage{
			{Role: RoleUser, Content: []Content{&TextContent{Text: "Summarise the incident."}}},
			{Role: RoleAssistant, Content: []Content{&TextContent{Text: "Which incident?"}}},
			{Role: RoleUser, Content: []Content{&TextContent{Text: "The outage"}, &TextContent{Text: "of Tuesday."}}},
		},
		SystemPrompt: "You are terse.", IncludeContext: "thisServer", Temperature: ptrFloat(0.2),
		StopSequences: []string{"\n\n"}, Metadata: map[string]any{"ticket": 42},
		ModelPreferences: &ModelPreferences{Hints: []ModelHint{{Name: "claude"}}, CostPriority: ptrFloat(0.3), IntelligencePriority: ptrFloat(0.9)},
	})}},
	{"sample/tools", []goldenAsk{askSample(&CreateMessageRequest{
		MaxTokens: 100, Messages: userSays("What is the weather in Paris?"),
		Tools: []*Tool{{Name: "weather", Description: "current weather",
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}},
	})}},
	{"sample/tools-and-choice", []goldenAsk{askSample(&CreateMessageRequest{
		MaxTokens: 100, Messages: userSays("What is the weather in Paris?"),
		Tools: []*Tool{{Name: "weather", InputSchema: map[string]any{"type": "object"}}}, ToolChoice: &ToolChoice{Mode: "required"},
	})}},
	{"roots/list", []goldenAsk{askRoots()}},
	{"repeated/elicit-three-times", []goldenAsk{askElicit[goldenName]("And the next name?"), askElicit[goldenName]("And the next name?"), askElicit[goldenName]("And the next name?")}},
	{"repeated/roots-twice", []goldenAsk{askRoots(), askRoots()}},
	{"repeated/sample-twice", []goldenAsk{askSample(&CreateMessageRequest{MaxTokens: 5, Messages: userSays("Flip a coin.")}), askSample(&CreateMessageRequest{MaxTokens: 5, Messages: userSays("Flip a coin.")})}},
	{"distinct/three-kinds-in-one-run", []goldenAsk{askElicit[goldenName]("What is your name?"), askURL("Sign in to continue", "https://auth.example.com/login?state=s1"), askRoots()}},
	{"with-key/elicit", []goldenAsk{askElicit[goldenName]("What is your name?", WithKey("name"))}},
	{"with-key/sample", []goldenAsk{askSample(&CreateMessageRequest{MaxTokens: 50, Messages: userSays("Write a haiku about autumn.")}, WithKey("haiku"))}},
	{"with-key/roots", []goldenAsk{askRoots(WithKey("workspace"))}},
	{"with-key/repeated", []goldenAsk{askElicit[goldenName]("Name?", WithKey("who")), askElicit[goldenName]("Name?", WithKey("who"))}},
	{"with-key/then-derived", []goldenAsk{askElicit[goldenName]("Name?", WithKey("who")), askElicit[goldenName]("Name?")}},
}

// sameKeyCases are cases whose questions are the same once canonical,
// so their keys must be equal.
var sameKeyCases = [][2]string{
	{"form/name", "form/name-reordered-spaced"},
	{"elicit/string", "form/name"},
	{"elicit/string", "distinct/three-kinds-in-one-run"},
}

// questionKeys runs every case on a server and returns, by case, the
// keys its InputRequiredResult carries, sorted.
func questionKeys(t *testing.T) map[string][]string {
	t.Helper()
	s := NewServer(Implementation{Name: "keys", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "ask"}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		var in struct{ Case string }
		if err := json.Unmarshal(r.Arguments, &in); err != nil {
			return nil, err
		}
		for _, c := range questionKeyCases {
			if c.name != in.Case {
				continue
			}
			var errs []error
			for _, ask := range c.asks {
				err := ask(ctx)
				if !errors.Is(err, ErrInputRequired) {
					return nil, fmt.Errorf("case %s: asking: %v", c.name, err)
				}
				errs = append(errs, err)
			}
			return nil, errors.Join(errs...)
		}
		return nil, fmt.Errorf("no case %q", in.Case)
	})
	h := NewHTTPHandler(s, nil)
	keys := map[string][]string{}
	for i, c := range questionKeyCases {
		if _, dup := keys[c.name]; dup {
			t.Fatalf("two cases named %s", c.name)
		}
		v := post(t, h, req(i+1, MethodToolsCall, `"name":"ask","arguments":{"case":`+quote(c.name)+`}`)).last(t)
		r := result(t, v)
		irs, _ := r["inputRequests"].(map[string]any)
		if r["resultType"] != "input_required" || len(irs) != len(c.asks) {
			t.Fatalf("case %s: want %d questions, got %v", c.name, len(c.asks), v)
		}
		for k := range irs {
			keys[c.name] = append(keys[c.name], k)
		}
		slices.Sort(keys[c.name])
	}
	return keys
}

// Keys are the names under which clients answer, and a requestState
// sealed by one release carries answers pinned to them: a release that
// derives another key for the same question loses every round in flight
// across its deploy. The golden file pins the keys of a representative
// set of questions; a change to it is a breaking change to call out.
func TestQuestionKeysAreStableAcrossReleases(t *testing.T) {
	t.Parallel()
	keys := questionKeys(t)
	for _, p := range sameKeyCases {
		if a, b := keys[p[0]], keys[p[1]]; len(a) == 0 || !slices.Contains(b, a[0]) {
			t.Errorf("%s %v and %s %v: the same question must have the same key", p[0], a, p[1], b)
		}
	}
	var b strings.Builder
	b.WriteString("# The key of each question in inputRequests, by case of\n" +
		"# TestQuestionKeysAreStableAcrossReleases (question_keys_test.go).\n" +
		"# A state sealed by one release carries answers pinned to these keys:\n" +
		"# a change here breaks rounds in flight across a deploy. Regenerate\n" +
		"# only for a deliberate, announced change:\n" +
		"#   go test ./mcp -run TestQuestionKeysAreStableAcrossReleases -update\n")
	for _, c := range questionKeyCases {
		for _, k := range keys[c.name] {
			fmt.Fprintf(&b, "%-36s %s\n", c.name, k)
		}
	}
	got := b.String()
	if *update {
		if err := os.WriteFile(filepath.FromSlash(questionKeysGolden), []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantFile, err := os.ReadFile(filepath.FromSlash(questionKeysGolden))
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if want := string(wantFile); got != want {
		gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want, "\n")
		for _, l := range wantLines {
			if !slices.Contains(gotLines, l) {
				t.Errorf("golden, not computed: %s", l)
			}
		}
		for _, l := range gotLines {
			if !slices.Contains(wantLines, l) {
				t.Errorf("computed, not golden:  %s", l)
			}
		}
		t.Errorf("question keys differ from %s: a key that changes breaks every round in flight across a deploy", questionKeysGolden)
	}
}
