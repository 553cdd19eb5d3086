package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{}`, `[]`, `""`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `-12.5e+30`, `.5`, `+1`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `NaN`, ` {"a" : [1, 2 ,{"b":null}] } `, `{"a":1,}`, `[1,]`, `[,1]`,
	`{"a"}`, `{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `"\u00e9\ud83d\ude00"`, `"\u12"`, `"\u12G4"`, `"\x"`, `"\/\b\f\n\r\t\\\""`,
	"\"a\tb\"", "\"a\x01b\"", "\"\xff\xfe\"", `"unterminated`, `{"a":"b"`, `[[[]]]`, `[[[]]`, `]`, `}`, `{]`, `[}`,
	"\t\r\n{}\n", "{}\x00", `1 2`, `{"a":1}{"b":2}`, `"é"`, `[true,false,null,-1.0e5,"x",{}]`,
}

// Valid answers as encoding/json.Valid does, on every case.
func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", c, got, want)
		}
	}
}

// The nesting limit is encoding/json's: 10 000 levels are valid, 10 001
// are not.
func TestValidHasEncodingJSONsNestingLimit(t *testing.T) {
	for _, depth := range []int{maxNestingDepth, maxNestingDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			close := "]"
			if open != "[" {
				close = "}"
			}
			b := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			if got, want := Valid(b), json.Valid(b); got != want {
				t.Errorf("%d levels of %s: Valid %v, encoding/json %v", depth, open, got, want)
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("a line of text\\n", 64) + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`)
	big := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ.\\n"), 16<<10)
	big = append(append([]byte(`{"text":"`), big...), `"}`...)
	for _, c := range []struct {
		name string
		data []byte
	}{{"message", msg}, {"1MiB", big}} {
		b.Run(c.name+"/jsonrpc", func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if !Valid(c.data) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(c.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if !json.Valid(c.data) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
