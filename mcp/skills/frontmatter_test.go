package skills

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseFrontmatterReadsTheSubset(t *testing.T) {
	t.Parallel()
	in := "\ufeff---\r\n" +
		"name: pdf-processing   # a comment\r\n" +
		"description: \"Extract: text \\\"and\\\" tables \\u00e9\"\r\n" +
		"license: 'it''s MIT'\r\n" +
		"\r\n" +
		"# a comment line\r\n" +
		"version: 1.5\r\n" +
		"count: -3\r\n" +
		"big: 1e3\r\n" +
		"draft: false\r\n" +
		"none: ~\r\n" +
		"empty:\r\n" +
		"allowed-tools: Bash(git:*) Read\r\n" +
		"metadata:\r\n" +
		"  author: me\r\n" +
		"  nested:\r\n" +
		"    deep: \"yes\"\r\n" +
		"tags:\r\n" +
		"- one\r\n" +
		"- 'two'\r\n" +
		"list:\r\n" +
		"  - 3\r\n" +
		"---  \r\n" +
		"body\r\n"
	fm, body, err := ParseFrontmatter([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"name": "pdf-processing", "description": "Extract: text \"and\" tables é", "license": "it's MIT",
		"version": 1.5, "count": -3.0, "big": 1000.0, "draft": false, "none": nil, "empty": nil,
		"allowed-tools": "Bash(git:*) Read",
		"metadata":      map[string]any{"author": "me", "nested": map[string]any{"deep": "yes"}},
		"tags":          []any{"one", "two"}, "list": []any{3.0},
	}
	if !reflect.DeepEqual(fm, want) {
		g, _ := json.Marshal(fm)
		w, _ := json.Marshal(want)
		t.Errorf("front matter\n got %s\nwant %s", g, w)
	}
	if string(body) != "body\r\n" {
		t.Errorf("body %q", body)
	}
}

func TestParseFrontmatterRefusesWhatItDoesNotRead(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"no opening line":       "name: a\n---\n",
		"no closing line":       "---\nname: a\n",
		"empty":                 "---\n---\n",
		"not a mapping":         "---\n- a\n---\n",
		"duplicate key":         "---\na: 1\na: 2\n---\n",
		"flow mapping":          "---\na: {b: c}\n---\n",
		"flow sequence":         "---\na: [b, c]\n---\n",
		"block scalar":          "---\na: |\n  text\n---\n",
		"anchor":                "---\na: &x b\n---\n",
		"alias":                 "---\na: *x\n---\n",
		"tag":                   "---\na: !!str b\n---\n",
		"multi-line plain":      "---\na: b\n  c\n---\n",
		"colon in plain":        "---\na: b: c\n---\n",
		"tab indentation":       "---\na:\n\tb: c\n---\n",
		"unclosed quote":        "---\na: \"b\n---\n",
		"text after quote":      "---\na: \"b\" c\n---\n",
		"bad escape":            "---\na: \"\\q\"\n---\n",
		"surrogate escape":      "---\na: \"\\ud800\"\n---\n",
		"infinity":              "---\na: .inf\n---\n",
		"huge integer":          "---\na: 123456789012345678901234567890\n---\n",
		"hex":                   "---\na: 0x1F\n---\n",
		"nested item":           "---\na:\n- - b\n---\n",
		"mapping in a sequence": "---\na:\n- b: c\n---\n",
		"too deep":              "---\na:\n b:\n  c:\n   d:\n    e: f\n---\n",
		"bad indentation":       "---\na: b\n c: d\n---\n",
		"invalid UTF-8":         "---\na: \xff\n---\n",
		"complex key":           "---\n? a\n: b\n---\n",
		"too many keys":         "---\n" + strings.Repeat("k: v\n", 1) + keys(600) + "---\n",
		"too long":              "---\na: \"" + strings.Repeat("x", MaxFrontmatterSize) + "\"\n---\n",
	} {
		if fm, _, err := ParseFrontmatter([]byte(in)); !errors.Is(err, ErrFrontmatter) {
			t.Errorf("%s: %v, %v; want ErrFrontmatter", name, fm, err)
		}
	}
}

func keys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("k")
		b.WriteString(strings.Repeat("x", i%40))
		b.WriteString(string(rune('a' + i/40)))
		b.WriteString(": v\n")
	}
	return b.String()
}

// FuzzParseFrontmatter: the parser never panics, wraps ErrFrontmatter in
// every error, returns only JSON values (string, bool, nil, float64, []any,
// map[string]any) within its depth and count bounds, and reads an input
// the same way twice.
func FuzzParseFrontmatter(f *testing.F) {
	for _, s := range []string{
		"---\nname: a\ndescription: b\n---\nbody",
		"---\nname: \"a\\u00e9\"\nmetadata:\n  k: v\ntags:\n- x\n---\n",
		"\ufeff---\r\nname: 'it''s'\r\n---\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fm, body, err := ParseFrontmatter(in)
		if err != nil {
			if !errors.Is(err, ErrFrontmatter) {
				t.Fatalf("error %v does not wrap ErrFrontmatter", err)
			}
			return
		}
		if len(body) > len(in) {
			t.Fatalf("body longer than the input")
		}
		n := 0
		var check func(v any, depth int)
		check = func(v any, depth int) {
			if depth > maxFrontmatterDepth {
				t.Fatalf("nesting %d deeper than %d", depth, maxFrontmatterDepth)
			}
			switch v := v.(type) {
			case nil, string, bool, float64:
			case []any:
				for _, e := range v {
					n++
					check(e, depth+1)
				}
			case map[string]any:
				for _, e := range v {
					n++
					check(e, depth+1)
				}
			default:
				t.Fatalf("a value of type %T", v)
			}
		}
		check(fm, 0)
		if n > maxFrontmatterKeys {
			t.Fatalf("%d keys and items, more than %d", n, maxFrontmatterKeys)
		}
		if _, err := json.Marshal(fm); err != nil {
			t.Fatalf("front matter %v does not encode: %v", fm, err)
		}
		again, _, err := ParseFrontmatter(in)
		if err != nil || !reflect.DeepEqual(again, fm) {
			t.Fatalf("a second parse differs: %v, %v", again, err)
		}
	})
}
