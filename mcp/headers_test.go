package mcp

import (
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// bindServer has a tool whose annotated arguments sit at the top level
// and under opts; the handler records the region it decodes.
func bindServer(t *testing.T) (http.Handler, *atomic.Int32) {
	s := NewServer(Implementation{Name: "bind", Version: "1"}, nil)
	var runs atomic.Int32
	schema := `{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"kind":{"type":"string","x-mcp-header":"Kind"},
		"count":{"type":"integer","x-mcp-header":"Count"},
		"opts":{"type":"object","properties":{"zone":{"type":"string","x-mcp-header":"Zone"}}}}}`
	s.AddTool(&Tool{Name: "bind", InputSchema: json.RawMessage(schema)}, func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) {
		runs.Add(1)
		var in struct {
			Region string `json:"region"`
		}
		_ = json.Unmarshal(r.Arguments, &in)
		return TextResult(in.Region), nil
	})
	return NewHTTPHandler(s, nil), &runs
}

func bindCall(t *testing.T, h http.Handler, args string, headers map[string]string) *httpResult {
	t.Helper()
	body := req(1, MethodToolsCall, `"name":"bind","arguments":`+args)
	hdr := headersFor(t, body)
	for k, v := range headers {
		hdr.Set(k, v)
	}
	return doHTTP(t, h, body, hdr)
}

// TestParamHeadersBindWhatTheHandlerSees: arguments holding a member
// that encoding/json folds onto an x-mcp-header property (upper case, ſ,
// K, at any depth of the annotated path), or repeating it, are refused
// with 400/-32020 before the handler runs, header or no header.
func TestParamHeadersBindWhatTheHandlerSees(t *testing.T) {
	t.Parallel()
	h, runs := bindServer(t)
	for name, c := range map[string]struct {
		args    string
		headers map[string]string
	}{
		"variant beside the value": {`{"region":"us-west1","REGION":"eu-evil"}`, map[string]string{"Mcp-Param-Region": "us-west1"}},
		"variant alone":            {`{"REGION":"eu-evil"}`, nil},
		"variant first":            {`{"Region":"eu-evil","region":"us-west1"}`, map[string]string{"Mcp-Param-Region": "us-west1"}},
		"kelvin sign":              {`{"kind":"a","\u212Aind":"b"}`, map[string]string{"Mcp-Param-Kind": "a"}},
		"kelvin sign alone":        {`{"Kind":"b"}`, nil},
		"nested variant":           {`{"opts":{"zone":"a","ZONE":"b"}}`, map[string]string{"Mcp-Param-Zone": "a"}},
		"nested parent variant":    {`{"OPTS":{"zone":"b"}}`, nil},
		"long s in parent":         {`{"opts":{"zone":"a"},"optſ":{"zone":"b"}}`, map[string]string{"Mcp-Param-Zone": "a"}},
	} {
		res := bindCall(t, h, c.args, c.headers)
		if res.status != 400 || errorCode(t, res.last(t)) != CodeHeaderMismatch {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
	// Repeats are refused when the params are decoded (-32602), before
	// any header is looked at.
	for _, args := range []string{`{"region":"a","region":"b"}`, `{"region":"a","\u0072egion":"b"}`, `{"opts":{"zone":"a","zone":"b"}}`} {
		res := bindCall(t, h, args, map[string]string{"Mcp-Param-Region": "a", "Mcp-Param-Zone": "a"})
		if res.status != 400 || errorCode(t, res.last(t)) != CodeInvalidParams {
			t.Errorf("%s: %d %s", args, res.status, res.body)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times on refused requests", n)
	}
	// Unrelated members and the proper form still pass.
	res := bindCall(t, h, `{"region":"us-west1","note":"REGION","opts":{"zone":"a","other":1}}`,
		map[string]string{"Mcp-Param-Region": "us-west1", "Mcp-Param-Zone": "a"})
	if res.status != 200 || text(t, res.last(t)) != "us-west1" {
		t.Errorf("proper call: %d %s", res.status, res.body)
	}
}

// TestDeclaredSiblingIsNotACaseVariant: a schema may declare two
// properties equal under folding; each is then its own argument.
func TestDeclaredSiblingIsNotACaseVariant(t *testing.T) {
	t.Parallel()
	s := NewServer(Implementation{Name: "sib", Version: "1"}, nil)
	s.AddTool(&Tool{Name: "sib", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"Region":{"type":"string"}}}`)},
		func(ctx context.Context, r *CallToolRequest) (ToolResponse, error) { return TextResult("ok"), nil })
	h := NewHTTPHandler(s, nil)
	body := req(1, MethodToolsCall, `"name":"sib","arguments":{"region":"a","Region":"b"}`)
	hdr := headersFor(t, body)
	hdr.Set("Mcp-Param-Region", "a")
	if res := doHTTP(t, h, body, hdr); res.status != 200 {
		t.Errorf("%d %s", res.status, res.body)
	}
	body = req(2, MethodToolsCall, `"name":"sib","arguments":{"region":"a","REGION":"b"}`)
	hdr = headersFor(t, body)
	hdr.Set("Mcp-Param-Region", "a")
	if res := doHTTP(t, h, body, hdr); res.status != 400 {
		t.Errorf("an undeclared variant passed: %d %s", res.status, res.body)
	}
}

// TestIntegerParamHeadersAreCanonicalDecimal: the header of an integer
// argument is -?(0|[1-9][0-9]*) within ±(2^53−1), compared as an integer
// with the body's value.
func TestIntegerParamHeadersAreCanonicalDecimal(t *testing.T) {
	t.Parallel()
	h, _ := bindServer(t)
	for _, hv := range []string{"0x10", "1_6", "+16", "016", "16.0", "1e1", "1.6e1", "٠١٦", "16a", "", "-", "--16"} {
		res := bindCall(t, h, `{"count":16}`, map[string]string{"Mcp-Param-Count": hv})
		if res.status != 400 || errorCode(t, res.last(t)) != CodeHeaderMismatch {
			t.Errorf("header %q matched 16: %d %s", hv, res.status, res.body)
		}
	}
	for body, hv := range map[string]string{
		"16": "16", "16.0": "16", "1.6e1": "16", "1600e-2": "16", "-5": "-5", "0": "0", "-0": "0", "0.0e5": "-0",
		"9007199254740991": "9007199254740991", "-9007199254740991": "-9007199254740991",
	} {
		if res := bindCall(t, h, `{"count":`+body+`}`, map[string]string{"Mcp-Param-Count": hv}); res.status != 200 {
			t.Errorf("body %s, header %q: %d %s", body, hv, res.status, res.body)
		}
	}
	for body, hv := range map[string]string{
		"9007199254740992": "9007199254740992", "16.5": "16", "1e400": "1", `"16"`: "16", "1.0000000000000001": "1",
	} {
		if res := bindCall(t, h, `{"count":`+body+`}`, map[string]string{"Mcp-Param-Count": hv}); res.status != 400 {
			t.Errorf("body %s, header %q accepted", body, hv)
		}
	}
}

// TestParamHeaderValueMustHaveTheDeclaredType: a body value of another
// JSON type than the annotated property's matches no header.
func TestParamHeaderValueMustHaveTheDeclaredType(t *testing.T) {
	t.Parallel()
	h := NewHTTPHandler(newTestServer(t, nil), nil)
	for args, headers := range map[string]map[string]string{
		`{"region":true}`: {"Mcp-Param-Region": "true"},
		`{"region":42}`:   {"Mcp-Param-Region": "42"},
		`{"count":"42"}`:  {"Mcp-Param-Count": "42"},
		`{"dry":"true"}`:  {"Mcp-Param-Dry": "true"},
	} {
		body := req(1, MethodToolsCall, `"name":"region","arguments":`+args)
		hdr := headersFor(t, body)
		for k, v := range headers {
			hdr.Set(k, v)
		}
		if res := doHTTP(t, h, body, hdr); res.status != 400 || errorCode(t, res.last(t)) != CodeHeaderMismatch {
			t.Errorf("%s: %d %s", args, res.status, res.body)
		}
	}
}

var canonicalDecimal = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// FuzzParamHeaderIntegers holds headerInteger to its definition
// (canonical decimal within ±(2^53−1)) and jsonInteger to exact rational
// arithmetic on the JSON number.
func FuzzParamHeaderIntegers(f *testing.F) {
	for _, s := range []string{"16", "-16", "0", "-0", "016", "+16", "0x10", "1_6", "16.0", "1e1", "1.6e1", "1600e-2", "9007199254740991",
		"9007199254740992", "-9007199254740991", "1e400", "0.0e99999999999", "1E+1", "12345678901234567", "٠", "1.5", ""} {
		f.Add(s)
	}
	const limit = 1<<53 - 1
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := headerInteger(s)
		want := canonicalDecimal.MatchString(s)
		var v int64
		if want {
			var err error
			v, err = strconv.ParseInt(s, 10, 64)
			want = err == nil && v >= -limit && v <= limit
		}
		if ok != want || (ok && n != v) {
			t.Fatalf("headerInteger(%q) = %d, %v; want %d, %v", s, n, ok, v, want)
		}
		// jsonInteger on JSON numbers short enough for big.Rat.
		if !json.Valid([]byte(s)) || !strings.ContainsAny(s[:1], "-0123456789") || len(s) > 40 || strings.ContainsAny(s, "eE") && len(s) > 12 {
			return
		}
		r, okr := new(big.Rat).SetString(s)
		if !okr {
			return
		}
		ji, jok := jsonInteger([]byte(s))
		wantJ := r.IsInt() && r.Num().IsInt64() && r.Num().Int64() >= -limit && r.Num().Int64() <= limit
		if jok != wantJ || (jok && ji != r.Num().Int64()) {
			t.Fatalf("jsonInteger(%q) = %d, %v; exact value %s", s, ji, jok, r.RatString())
		}
	})
}
