package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
)

const tuiSchema = `{"type":"object","properties":{
 "region":{"type":"string","enum":["eu-west-1","us-east-1","ap-south-1"]},
 "password":{"type":"string","format":"password"},
 "api_key":{"type":"string"},
 "go":{"type":"boolean","default":true}
},"required":["region","password"]}`

// askTUI answers field name of tuiSchema in terminal mode with keys.
func askTUI(t *testing.T, name, keys string) (string, string) {
	t.Helper()
	fields, err := parseForm(json.RawMessage(tuiSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if f.name != name {
			continue
		}
		var out testutil.Buffer
		a := newAsker(strings.NewReader(keys), &out, "human", false)
		a.tui = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		line, err := a.askFieldTUI(ctx, f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return line, out.String()
	}
	t.Fatalf("no field %s", name)
	return "", ""
}

// In a terminal an enum is picked with the arrow keys, a secret field
// (format password, or a name like api_key) is masked, and a boolean
// is a yes/no choice.
func TestTerminalInputPicksEnumsWithArrowsAndMasksSecrets(t *testing.T) {
	if line, _ := askTUI(t, "region", "\x1b[B\r"); line != "us-east-1" {
		t.Errorf("down, enter picked %q, want us-east-1", line)
	}
	if line, _ := askTUI(t, "region", "\x1b[B\x1b[B\x1b[A\r"); line != "us-east-1" {
		t.Errorf("down, down, up, enter picked %q, want us-east-1", line)
	}
	line, screen := askTUI(t, "password", "sesame\r")
	if line != "sesame" {
		t.Errorf("password = %q", line)
	}
	if strings.Contains(screen, "sesame") {
		t.Errorf("the password was echoed on the terminal")
	}
	if _, screen := askTUI(t, "api_key", "k-123\r"); strings.Contains(screen, "k-123") {
		t.Errorf("the api_key was echoed on the terminal")
	}
	if line, _ := askTUI(t, "go", "\r"); line != "y" {
		t.Errorf("enter on a boolean defaulting to true = %q, want y", line)
	}
	if line, _ := askTUI(t, "go", "n"); line != "n" {
		t.Errorf("n on a boolean = %q, want n", line)
	}
	// !cancel in a text field refuses the form, as in the line mode.
	if line, _ := askTUI(t, "api_key", "!cancel\r"); line != tokCancel {
		t.Errorf("!cancel = %q", line)
	}
}

// Ctrl-C in a terminal field (a key in raw mode, not SIGINT) stops the
// program as an interrupt does: exit status 130.
func TestCtrlCInATerminalFieldIsAnInterrupt(t *testing.T) {
	fields, _ := parseForm(json.RawMessage(tuiSchema))
	a := newAsker(strings.NewReader("\x03"), io.Discard, "human", false)
	a.tui = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := a.askFieldTUI(ctx, fields[0])
	if f := classify(err, false); f.Exit != exitInterrupted || f.Code != "interrupted" {
		t.Fatalf("ctrl-c: %v → exit %d %q, want %d", err, f.Exit, f.Code, exitInterrupted)
	}
}
