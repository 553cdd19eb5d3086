package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
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
		`{"jsonrpc":"2.0","id":1,"method":"m","paramſ":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","\u0070arams":{},"params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","ID":2}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"m\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\",\"metho\xff\":\"m\"}",
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
		if out := AppendError(nil, m.ID, NewError(CodeInvalidRequest, "x")); !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("error response %q is not valid UTF-8 JSON", out)
		}
	})
}

// FuzzScanner runs the scanner on arbitrary, possibly invalid, input:
// it must never panic or loop. On valid JSON, Key resolves every name as
// encoding/json does, and DuplicateMember agrees with a reference built
// on encoding/json's reading of names.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"`, `{"a`, `{"a":`, `{"a":"\`, `[1,`, `{"a":[}`, `"\`,
		`{"region":"us","\u0072egion":"eu"}`, `{"a":{"b":1,"b":2}}`, `[{"x":1},{"x":2}]`, `{"k":1,"K":2,"\u212A":3}`,
		"{\"a\xff\":1,\"a\xfe\":2}", `{"\ud800":1,"\udfff":2}`, `{"ſ":1,"s":2}`, `{"a":"{\"a\":1,\"a\":2}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n := 0
		_ = Fields(data, func(k, v []byte) error { n++; String(v); Key(k); return nil })
		_ = Elements(data, func(v []byte) error { n++; return nil })
		if n > len(data) {
			t.Fatalf("%d members in %d bytes", n, len(data))
		}
		if !json.Valid(data) {
			return
		}
		name, dup := DuplicateMember(data)
		want := refDuplicate(t, TrimSpace(data))
		if dup != (want != nil) || (dup && !bytes.Equal(name, want)) {
			t.Fatalf("DuplicateMember(%q) = %q, %v; reference %q", data, name, dup, want)
		}
	})
}

// refDuplicate is DuplicateMember's definition: the first name, in
// document order of the second occurrence, that an object repeats, names
// decoded by encoding/json. It also checks Key on every name.
func refDuplicate(t *testing.T, v []byte) []byte {
	var found []byte
	var walk func(v []byte)
	walk = func(v []byte) {
		switch KindOf(v) {
		case KindObject:
			seen := map[string]bool{}
			_ = Fields(v, func(k, val []byte) error {
				var name string
				if err := json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &name); err != nil {
					t.Fatalf("name %q: %v", k, err)
				}
				if got := string(Key(k)); got != name {
					t.Fatalf("Key(%q) = %q, encoding/json %q", k, got, name)
				}
				if seen[name] && found == nil {
					found = []byte(name)
				}
				seen[name] = true
				if found == nil {
					walk(TrimSpace(val))
				}
				return nil
			})
		case KindArray:
			_ = Elements(v, func(e []byte) error {
				if found == nil {
					walk(TrimSpace(e))
				}
				return nil
			})
		}
	}
	walk(v)
	return found
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

// TestEnvelopeRefusesUnicodeCaseVariants: encoding/json reads "paramſ"
// (U+017F) as params and "\u212Aey" (KELVIN SIGN) as key; the envelope
// decoder refuses such members like ASCII case variants.
func TestEnvelopeRefusesUnicodeCaseVariants(t *testing.T) {
	for _, in := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"m","paramſ":{"x":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","param\u017f":{"x":1}}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{},"PARAMS":{"x":1}}`,
		`{"jsonrpc":"2.0","id":1,"reſult":{}}`,
	} {
		if _, err := Decode([]byte(in)); err == nil || err.Code != CodeInvalidRequest || !strings.Contains(err.Message, "case") {
			t.Errorf("Decode(%s) = %v", in, err)
		}
	}
}

// TestEqualFoldIsEncodingJSONFolding: EqualFold agrees with
// bytes.EqualFold, the relation encoding/json matches names with.
func TestEqualFoldIsEncodingJSONFolding(t *testing.T) {
	for _, c := range [][2]string{
		{"params", "params"}, {"paramſ", "params"}, {"PARAMS", "params"}, {"\u212Aind", "kind"}, {"Kind", "kind"},
		{"kind", "Kind"}, {"ſ", "S"}, {"ß", "ss"}, {"", ""}, {"a", ""}, {"é", "É"}, {"\xff", "\ufffd"}, {"\xff", "\xfe"},
		{"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo"}, {"Σ", "ς"}, {"ǅ", "ǆ"}, {"k", "K"},
	} {
		if got, want := EqualFold([]byte(c[0]), c[1]), bytes.EqualFold([]byte(c[0]), []byte(c[1])); got != want {
			t.Errorf("EqualFold(%q, %q) = %v, bytes.EqualFold %v", c[0], c[1], got, want)
		}
	}
	if !EqualFold([]byte("paramſ"), "params") || !EqualFold([]byte("Kind"), "kind") {
		t.Error("ſ and K must fold")
	}
}

func FuzzEqualFold(f *testing.F) {
	for _, c := range [][2]string{{"paramſ", "params"}, {"Kind", "kind"}, {"Method", "method"}, {"ß", "ss"}, {"\xff", "\xfe"}, {"a", "ab"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := EqualFold([]byte(a), b), bytes.EqualFold([]byte(a), []byte(b)); got != want {
			t.Fatalf("EqualFold(%q, %q) = %v, bytes.EqualFold %v", a, b, got, want)
		}
	})
}

// TestDuplicateMemberResolvesEscapes: names are compared as decoded, at
// any depth, and only within one object.
func TestDuplicateMemberResolvesEscapes(t *testing.T) {
	many := func(n int, extra string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			b.WriteString(`"k` + itoa(i) + `":1,`)
		}
		return b.String() + extra + "}"
	}
	for in, want := range map[string]string{
		`{"region":"us","\u0072egion":"eu"}`:        "region",
		`{"a":{"b":[{"c":1,"c":2}]}}`:               "c",
		`[1,{"x":{"y":1},"x":2}]`:                   "x",
		"{\"a\xff\":1,\"a\xfe\":2}":                 "a\ufffd",
		`{"\ud800":1,"\udfff":2}`:                   "\ufffd",
		many(100, `"k\u0037":2`):                    "k7",
		`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`: "",
		`{"a":"{\"a\":1,\"a\":2}","b":"\"a\":"}`:    "",
		`{"k":1,"K":2,"\u212A":3}`:                  "",
		many(100, `"k_7":2`):                        "",
		many(20, `"k7":2`):                          "k7",
	} {
		name, dup := DuplicateMember([]byte(in))
		if want == "" && dup || want != "" && string(name) != want {
			t.Errorf("DuplicateMember(%.60s) = %q, %v; want %q", in, name, dup, want)
		}
	}
}

// TestStringIDWithInvalidUTF8IsEchoedAsValidJSON: such an id is kept as
// encoding/json reads it, so every response is valid UTF-8 JSON.
func TestStringIDWithInvalidUTF8IsEchoedAsValidJSON(t *testing.T) {
	m, err := Decode([]byte("{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"m\"}"))
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range [][]byte{AppendResponse(nil, m.ID, []byte(`{}`)), AppendError(nil, m.ID, NewError(CodeInternalError, "x"))} {
		var v struct{ ID string }
		if !utf8.Valid(out) || json.Unmarshal(out, &v) != nil || v.ID != "a\ufffdb" {
			t.Errorf("%q", out)
		}
	}
	// The id of a failed decode is echoed too.
	m, err = Decode([]byte("{\"jsonrpc\":\"1.0\",\"id\":\"\xc3\",\"method\":\"m\"}"))
	if err == nil || !utf8.ValidString(m.ID.Raw()) {
		t.Errorf("%q %v", m.ID.Raw(), err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestPlainKeyFindsBackslashesAndNonASCII(t *testing.T) {
	for i := range 20 {
		for _, c := range []byte{'\\', 0x80, 0xff, 'a'} {
			k := []byte(strings.Repeat("a", 20))
			k[i] = c
			if got, want := plainKey(k), c == 'a'; got != want {
				t.Errorf("plainKey(%q) = %v", k, got)
			}
			if got, want := plainKey(k[:i+1]), c == 'a'; got != want {
				t.Errorf("plainKey(%q) = %v", k[:i+1], got)
			}
		}
	}
}

// FuzzDecodeBatch: DecodeBatch never panics; a batch it accepts holds 1 to
// max entries, each exactly what Decode makes of its element; a
// non-array is refused whole.
func FuzzDecodeBatch(f *testing.F) {
	for _, s := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"x"}}]`,
		`[1,2,3]`, `[]`, ` [ ] `, `[{"jsonrpc":"2.0","id":null,"method":"x"}]`, `[[]]`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}] `,
	} {
		f.Add([]byte(s), uint8(4))
	}
	f.Fuzz(func(t *testing.T, data []byte, max uint8) {
		entries, e := DecodeBatch(data, int(max))
		if e != nil {
			if entries != nil {
				t.Fatalf("entries with an error: %v", entries)
			}
			if e.Code != CodeParseError && e.Code != CodeInvalidRequest {
				t.Fatalf("code %d", e.Code)
			}
			return
		}
		if !IsBatch(data) || len(entries) == 0 || (max > 0 && len(entries) > int(max)) {
			t.Fatalf("accepted %q as %d entries (max %d)", data, len(entries), max)
		}
		i := 0
		_ = Elements(data, func(v []byte) error {
			m, de := Decode(v)
			got := entries[i]
			if got.Msg.ID != m.ID || got.Msg.Method != m.Method || string(got.Msg.Params) != string(m.Params) ||
				(got.Err == nil) != (de == nil) || (de != nil && got.Err.Message != de.Message) {
				t.Fatalf("entry %d of %q: %+v, Decode gives %+v %v", i, data, got, m, de)
			}
			i++
			return nil
		})
		if i != len(entries) {
			t.Fatalf("%d elements, %d entries", i, len(entries))
		}
	})
}

func TestDecodeBatchRefusesWhatIsNoBatch(t *testing.T) {
	for in, code := range map[string]int{
		`[]`: CodeInvalidRequest, `{"jsonrpc":"2.0","id":1,"method":"ping"}`: CodeInvalidRequest,
		`[{"jsonrpc"`: CodeParseError, `[1,2]`: 0,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`: CodeInvalidRequest,
	} {
		entries, e := DecodeBatch([]byte(in), 2)
		switch {
		case code == 0 && (e != nil || len(entries) != 2 || entries[0].Err == nil || entries[0].Err.Code != CodeInvalidRequest):
			t.Errorf("%s: %v %v", in, entries, e)
		case code != 0 && (e == nil || e.Code != code):
			t.Errorf("%s: %v, want code %d", in, e, code)
		}
	}
	if entries, e := DecodeBatch([]byte(`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"n"}]`), 0); e != nil || len(entries) != 2 ||
		entries[0].Msg.ID.Raw() != `"a"` || !entries[1].Msg.IsNotification() {
		t.Errorf("a good batch: %v %v", entries, e)
	}
}
