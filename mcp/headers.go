package mcp

import (
	"net/http"
	"slices"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// HTTP header bindings of 2026-07-28: the body is the source of truth and
// the headers must agree with it, so that intermediaries routing on
// headers see what the server executes. The server's checks; the names
// and the value encoding both sides use are in wire_headers.go.

func headerMismatch(msg string) *Error {
	return jsonrpc.NewError(CodeHeaderMismatch, "Header mismatch: "+msg)
}

// single returns the one value of header name; more than one is invalid.
func single(h http.Header, name string) (string, bool, *Error) {
	vs := h.Values(name)
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
		return vs[0], true, nil
	}
	return "", false, headerMismatch(name + " appears more than once")
}

// checkHeaders validates the standard and custom MCP headers of a
// 2026-07-28 request against the decoded body: every one is required.
func checkHeaders(s *Server, c *call, h http.Header) *Error {
	meta := c.params.RequestMeta()
	v, ok, e := single(h, HeaderProtocolVersion)
	if e != nil {
		return e
	}
	if !ok {
		return headerMismatch("missing " + HeaderProtocolVersion + " header")
	}
	if strings.Trim(v, " \t") != meta.ProtocolVersion {
		return headerMismatch(HeaderProtocolVersion + " header does not match _meta." + metaProtocolVersion)
	}
	return checkBindings(s, c, h, true)
}

// checkBindings checks Mcp-Method, Mcp-Name and the Mcp-Param-* headers
// against the body. With required unset (a legacy request: its revision
// defines none of these headers) an absent header is fine, but one that
// is present must agree, so that intermediaries routing on headers see
// what the server executes.
func checkBindings(s *Server, c *call, h http.Header, required bool) *Error {
	if e := checkMethodHeader(c.msg.Method, h, required); e != nil {
		return e
	}
	var name string
	switch p := c.params.(type) {
	case *CallToolRequest:
		name = p.Name
	case *GetPromptRequest:
		name = p.Name
	case *ReadResourceRequest:
		name = p.URI
	case *ExtensionRequest: // a custom method's target, e.g. tasks/*' taskId (extension.go)
		if p.m == nil || p.m.spec.TargetMember == "" {
			return nil
		}
		name = p.Target
	default:
		return nil
	}
	n, ok, e := single(h, HeaderName)
	if e != nil {
		return e
	}
	switch {
	case !ok && required:
		return headerMismatch("missing " + HeaderName + " header")
	case ok:
		dn, valid := decodeHeaderValue(n)
		if !valid {
			return headerMismatch(HeaderName + " header has invalid characters or invalid base64")
		}
		if dn != name {
			return headerMismatch(HeaderName + " header does not match the request")
		}
	}
	// With ServerOptions.Visible a tool's parameter headers are checked
	// once its visibility is known (visible.go): a mismatch must not tell
	// a hidden tool from an unknown one.
	if p, ok := c.params.(*CallToolRequest); ok && (s.opts.Visible == nil || c.toolVisible) {
		t, _ := s.tools.get(p.Name)
		if t != nil {
			for i := range t.headers {
				ph := &t.headers[i]
				if !required && len(h.Values(headerParamPrefix+ph.name)) == 0 {
					continue
				}
				if e := checkParamHeader(ph, p.Arguments, h); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// checkMethodHeader checks the Mcp-Method header against the body's
// method; an absent one is an error only when required.
func checkMethodHeader(method string, h http.Header, required bool) *Error {
	m, ok, e := single(h, HeaderMethod)
	if e != nil {
		return e
	}
	if !ok {
		if required {
			return headerMismatch("missing " + HeaderMethod + " header")
		}
		return nil
	}
	if strings.Trim(m, " \t") != method {
		return headerMismatch(HeaderMethod + " header does not match the request method")
	}
	return nil
}

// checkParamHeader checks one x-mcp-header binding (SEP-2243): the
// header and the argument it mirrors agree, and the argument is what any
// decoder of the arguments would read. No object on the path to the
// argument may hold a member that encoding/json would fold onto the path
// element without being it ("REGION", "regionſ"... for "region"; see
// jsonrpc.EqualFold), nor repeat it: such a body is a -32020 even without
// the header, since a handler decoding with encoding/json would see a
// value the header did not show. Values compare by the property's
// declared type, strictly:
//
//   - string: the body string equals the decoded header value;
//   - boolean: the body is true or false and the header says the same,
//     in lower case;
//   - integer: the body is a JSON number denoting an integer within
//     ±(2^53−1) (16, 16.0 and 1.6e1 all denote 16), and the header is
//     that integer in canonical decimal, -?(0|[1-9][0-9]*): 016, +16,
//     0x10, 1_6, 16.0 and 1e1 do not match 16.
//
// A body value of another JSON type than the declared one does not match
// any header. Number (non-integer) properties cannot be annotated: the
// server refuses such a tool at registration and clients drop it, as the
// specification requires, so no rule compares fractions.
func checkParamHeader(ph *paramHeader, args []byte, h http.Header) *Error {
	hname := headerParamPrefix + ph.name
	hv, present, e := single(h, hname)
	if e != nil {
		return e
	}
	body, e := annotatedValue(args, ph, hname)
	if e != nil {
		return e
	}
	if body == nil || jsonrpc.KindOf(body) == jsonrpc.KindNull {
		if present {
			return headerMismatch(hname + " header is set but the argument is absent")
		}
		return nil
	}
	if !present {
		return headerMismatch("missing " + hname + " header for argument " + strings.Join(ph.path, "."))
	}
	dv, valid := decodeHeaderValue(hv)
	if !valid {
		return headerMismatch(hname + " header has invalid characters or invalid base64")
	}
	body = jsonrpc.TrimSpace(body)
	switch kind := jsonrpc.KindOf(body); {
	case kind == jsonrpc.KindString && ph.typ == "string":
		if s, _ := jsonrpc.String(body); s == dv {
			return nil
		}
	case kind == jsonrpc.KindNumber && ph.typ == "integer":
		a, ok1 := jsonInteger(body)
		b, ok2 := headerInteger(dv)
		if ok1 && ok2 && a == b {
			return nil
		}
	case kind == jsonrpc.KindBool && ph.typ == "boolean":
		if dv == string(body) {
			return nil
		}
	}
	return headerMismatch(hname + " header does not match argument " + strings.Join(ph.path, "."))
}

// annotatedValue returns the raw argument at ph.path, nil when absent,
// walking the arguments exactly: at each level a member equal to the path
// element is taken, a repeated one or one folding onto it (other than a
// property the schema declares by that very name) is an error.
func annotatedValue(args []byte, ph *paramHeader, hname string) ([]byte, *Error) {
	cur := args
	for depth, want := range ph.path {
		if jsonrpc.KindOf(cur) != jsonrpc.KindObject {
			return nil, nil
		}
		var next []byte
		var bad *Error
		_ = jsonrpc.Fields(cur, func(rk, v []byte) error {
			k := jsonrpc.Key(rk)
			switch {
			case string(k) == want:
				if next != nil {
					bad = headerMismatch("argument " + strings.Join(ph.path[:depth+1], ".") + " (mirrored in " + hname + ") appears more than once")
					return errStopScan
				}
				next = v
			case jsonrpc.EqualFold(k, want) && !slices.Contains(ph.siblings[depth], string(k)):
				bad = headerMismatch("argument member \"" + jsonrpc.Clip(k) + "\" differs from \"" + want + "\" (mirrored in " + hname + ") only in case")
				return errStopScan
			}
			return nil
		})
		if bad != nil {
			return nil, bad
		}
		if next == nil {
			return nil, nil
		}
		cur = next
	}
	return cur, nil
}

// maxHeaderInteger is the largest integer magnitude an x-mcp-header may
// carry, 2^53−1 (exact in every JSON implementation).
const maxHeaderInteger = 1<<53 - 1

// headerInteger parses an Mcp-Param-* value of an integer property:
// canonical decimal only, -?(0|[1-9][0-9]*), within ±(2^53−1).
func headerInteger(s string) (int64, bool) {
	d, neg := strings.CutPrefix(s, "-")
	if d == "" || len(d) > 16 || (d[0] == '0' && len(d) > 1) {
		return 0, false
	}
	var n int64
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if n > maxHeaderInteger {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// jsonInteger returns the value of a JSON number token when it denotes an
// integer within ±(2^53−1), however it is spelled (16, 16.0, 1.6e1,
// 1600e-2); ok is false for fractions and larger magnitudes. It never
// rounds: the decision is made on the decimal digits.
func jsonInteger(tok []byte) (int64, bool) {
	i := 0
	neg := i < len(tok) && tok[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
		i++
	}
	intPart := tok[start:i]
	var frac []byte
	if i < len(tok) && tok[i] == '.' {
		i++
		fs := i
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i++
		}
		frac = tok[fs:i]
	}
	exp := 0
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		eneg := false
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			eneg = tok[i] == '-'
			i++
		}
		if i == len(tok) {
			return 0, false
		}
		for ; i < len(tok); i++ {
			c := tok[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			if exp < 1e9 { // saturate: far beyond any digit count
				exp = exp*10 + int(c-'0')
			}
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(tok) || len(intPart) == 0 {
		return 0, false
	}
	// The value is digits × 10^e, digits = intPart frac without
	// leading or trailing zeros.
	e := exp - len(frac)
	lead := func(b []byte) []byte {
		for len(b) > 0 && b[0] == '0' {
			b = b[1:]
		}
		return b
	}
	ip, fp := lead(intPart), frac
	if len(ip) == 0 {
		fp = lead(fp)
	}
	// Trailing zeros of the whole digit string raise e.
	for len(fp) > 0 && fp[len(fp)-1] == '0' {
		fp = fp[:len(fp)-1]
		e++
	}
	if len(fp) == 0 {
		for len(ip) > 0 && ip[len(ip)-1] == '0' {
			ip = ip[:len(ip)-1]
			e++
		}
	}
	if len(ip)+len(fp) == 0 {
		return 0, true // zero, however written
	}
	if e < 0 || len(ip)+len(fp)+e > 16 {
		return 0, false
	}
	var n int64
	for _, c := range ip {
		n = n*10 + int64(c-'0')
	}
	for _, c := range fp {
		n = n*10 + int64(c-'0')
	}
	for ; e > 0; e-- {
		n *= 10
	}
	if n > maxHeaderInteger {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
