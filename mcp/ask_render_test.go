package mcp

import (
	"strconv"
	"strings"
	"testing"
)

// TestElicitRenderingIsCachedAsItRenders checks that the cached rendering
// of an Elicit[T] question (renderElicit) is the one renderQuestion
// makes, that it is reused, that a question under another key or asked
// twice gets its own id, and that the cache stays within its bounds.
func TestElicitRenderingIsCachedAsItRenders(t *testing.T) {
	fs := mustForm[Region](t)
	req := &ElicitRequest{Mode: ElicitModeForm, Message: "render cache: which region?", RequestedSchema: fs.raw}
	want, err := renderQuestion(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := renderElicit(fs, req)
	if err != nil {
		t.Fatal(err)
	}
	if *got != *want {
		t.Fatalf("cached rendering %+v, want %+v", *got, *want)
	}
	if again, _ := renderElicit(fs, req); again != got {
		t.Fatal("the second rendering is not the cached one")
	}
	if want.id != questionID(want.key, want.digest) {
		t.Fatal("the rendered id is not the key's question id")
	}
	q := got.question(req, nil, nil)
	if q.key != want.key || q.questionID() != want.id {
		t.Fatalf("question %q %x, want %q %x", q.key, q.questionID(), want.key, want.id)
	}
	q.key += "_2" // the second identical question of a run (askScope.ask)
	if q.questionID() != questionID(want.key+"_2", want.digest) {
		t.Fatal("a renamed question kept the id of its first name")
	}
	own := got.question(req, []AskOption{WithKey("region")}, nil)
	if own.key != "region" || own.questionID() != questionID("region", want.digest) {
		t.Fatalf("WithKey: %q %x", own.key, own.questionID())
	}
	other, _ := renderElicit(fs, &ElicitRequest{Mode: ElicitModeForm, Message: "render cache: another?", RequestedSchema: fs.raw})
	if other.digest == got.digest {
		t.Fatal("two messages render alike")
	}

	// Bounded: many messages, and long ones, never grow it past its bound.
	long := &ElicitRequest{Mode: ElicitModeForm, Message: strings.Repeat("x", maxRenderedMessageBytes+1), RequestedSchema: fs.raw}
	if _, err := renderElicit(fs, long); err != nil {
		t.Fatal(err)
	}
	if _, ok := renderedElicits.Load(elicitRenderKey{fs, long.Message}); ok {
		t.Fatal("a message over the bound was cached")
	}
	for i := range maxRenderedElicits + 50 {
		m := &ElicitRequest{Mode: ElicitModeForm, Message: "render cache " + strconv.Itoa(i), RequestedSchema: fs.raw}
		r, err := renderElicit(fs, m)
		if err != nil {
			t.Fatal(err)
		}
		if w, _ := renderQuestion(m); *r != *w {
			t.Fatalf("message %d: rendering %+v, want %+v", i, *r, *w)
		}
	}
	n := 0
	renderedElicits.Range(func(any, any) bool { n++; return true })
	if n > maxRenderedElicits || renderedElicitsN.Load() > maxRenderedElicits {
		t.Fatalf("%d entries (counted %d), bound %d", n, renderedElicitsN.Load(), maxRenderedElicits)
	}
}
