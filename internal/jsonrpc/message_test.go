package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeClassifiesMessages(t *testing.T) {
	m, err := Decode([]byte(`{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"x":1}}`))
	if err != nil || !m.IsRequest() || m.ID.Raw() != `"a"` || string(m.Params) != `{"x":1}` {
		t.Fatalf("request: %+v %v", m, err)
	}
	m, err = Decode([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled"}`))
	if err != nil || !m.IsNotification() {
		t.Fatalf("notification: %+v %v", m, err)
	}
	m, err = Decode([]byte(`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete"}}`))
	if err != nil || !m.IsResponse() || m.ID.Raw() != "7" {
		t.Fatalf("response: %+v %v", m, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := map[string]int{
		``:                                       CodeParseError,
		`{`:                                      CodeParseError,
		`"str"`:                                  CodeInvalidRequest,
		`[]`:                                     CodeInvalidRequest,
		`{}`:                                     CodeInvalidRequest,
		`{"jsonrpc":"2.0"}`:                      CodeInvalidRequest,
		`{"jsonrpc":2,"id":1,"method":"m"}`:      CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":{},"method":"m"}`: CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":true,"method":"m"}`:                CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`:                CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":""}`:                    CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}`:      CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"method":"m","result":{}}`:       CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"result":{},"error":{}}`:         CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}`:            CodeInvalidRequest,
		`{"jsonrpc":"2.0","ID":1,"method":"m"}`:                   CodeInvalidRequest,
		`{"jsonrpc":"2.0","id":1,"\u006dethod":"a","method":"b"}`: CodeInvalidRequest,
	}
	for in, code := range cases {
		_, err := Decode([]byte(in))
		if err == nil || err.Code != code {
			t.Errorf("Decode(%s) = %v, want code %d", in, err, code)
		}
	}
}

func TestDecodeKeepsIDOnError(t *testing.T) {
	m, err := Decode([]byte(`{"jsonrpc":"1.0","id":42,"method":"m"}`))
	if err == nil || m.ID.Raw() != "42" {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestIntegralFloatIDIsNormalised(t *testing.T) {
	m, err := Decode([]byte(`{"jsonrpc":"2.0","id":3.0,"method":"m"}`))
	if err != nil || m.ID.Raw() != "3" {
		t.Fatalf("%+v %v", m, err)
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\", "\n\r\t\x00\x1f", "<>&", "é漢字", "\u2028\u2029", "bad\xffutf8"} {
		got := AppendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: invalid JSON %s", s, got)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("%q: round trip %q, want %q", s, back, wantBack)
		}
	}
}

func TestAppendErrorOmitsUnknownID(t *testing.T) {
	b := AppendError(nil, ID{}, NewError(CodeParseError, "Parse error"))
	if strings.Contains(string(b), `"id"`) || !json.Valid(b) {
		t.Errorf("%s", b)
	}
	b = AppendError(nil, IntID(9), NewErrorData(CodeInvalidParams, "x", map[string]int{"a": 1}))
	if string(b) != `{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"x","data":{"a":1}}}` {
		t.Errorf("%s", b)
	}
}

func TestFieldsWalksNestedValues(t *testing.T) {
	var keys []string
	err := Fields([]byte(` { "a" : [1,{"x":"}"}] , "b":"q\"}" ,"c":{"d":[]},"e":-1.5e3 } `), func(k, v []byte) error {
		keys = append(keys, string(k)+"="+string(v))
		return nil
	})
	want := `a=[1,{"x":"}"}]|b="q\"}"|c={"d":[]}|e=-1.5e3`
	if err != nil || strings.Join(keys, "|") != want {
		t.Errorf("%v %q", err, keys)
	}
}

// FuzzDecode: no input panics; valid JSON never yields a parse error and
// invalid JSON always does; a decoded request's params are an object.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x"}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"resultType":"complete"}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"m"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","Method":"n"}`,
		`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
		`[{"jsonrpc":"2.0"}]`, `{"a":"\ud800"}`, ``, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		valid := json.Valid(data)
		if !valid && (err == nil || err.Code != CodeParseError) {
			t.Fatalf("invalid JSON not a parse error: %v", err)
		}
		if valid && err != nil && err.Code == CodeParseError {
			t.Fatalf("valid JSON reported as parse error")
		}
		if err == nil && m.IsRequest() && m.Params != nil && KindOf(m.Params) != KindObject {
			t.Fatalf("params not an object: %s", m.Params)
		}
		if err == nil && m.IsRequest() && !json.Valid([]byte(m.ID.Raw())) {
			t.Fatalf("id %q is not JSON", m.ID.Raw())
		}
	})
}

// FuzzScanner runs the scanner on arbitrary, possibly invalid, input:
// it must never panic or loop.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"`, `{"a`, `{"a":`, `{"a":"\`, `[1,`, `{"a":[}`, `"\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		_ = Fields(data, func(k, v []byte) error { n++; String(v); Key(k); return nil })
		_ = Elements(data, func(v []byte) error { n++; return nil })
		if n > len(data) {
			t.Fatalf("%d members in %d bytes", n, len(data))
		}
	})
}

func TestEscapedVersionIsStill2dot0(t *testing.T) {
	if _, err := Decode([]byte(`{"jsonrpc":"\u0032.0","id":1,"method":"m"}`)); err != nil {
		t.Errorf("escaped \"2.0\" rejected: %v", err)
	}
}

// FuzzStringMatchesEncodingJSON: String decodes every JSON string exactly
// as encoding/json does.
func FuzzStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u6f22"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udfff\ud800x"`, `"\ud800\u0041"`, "\"bad\xffutf8\"", `"\u12"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		wantErr := json.Unmarshal(b, &want) != nil || KindOf(b) != KindString
		got, ok := String(b)
		if wantErr {
			if ok && json.Valid(b) {
				t.Fatalf("%q: accepted %q, encoding/json refuses", b, got)
			}
			return
		}
		if !ok || got != want {
			t.Fatalf("%q: got %q (%v), encoding/json %q", b, got, ok, want)
		}
	})
}
