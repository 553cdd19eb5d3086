package mcp

import (
	"net/http"
	"testing"
)

// Every transport prepares a request the same way (Server.prepare): a
// 2025-era request whose params do not decode is answered in-band, but
// only once its Mcp-Method header, which an intermediary may have routed
// on, agrees with it; one that contradicts it is refused with 400, on a
// session and on a stateless handler alike.
func TestARequestWhoseParamsFailStillHasItsMethodHeaderChecked(t *testing.T) {
	t.Parallel()
	s, runs := dualServer(t, nil)
	ts, _ := legacyServer(t, s, nil)
	sts, _ := legacyServer(t, s, &HTTPOptions{Legacy: LegacyHTTPOptions{Stateless: true}})
	p := newParty(t, ts.URL, "", nil)
	sid := p.mustInitialize()
	sp := newParty(t, sts.URL, "", nil)
	const bad = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":7}}`
	for _, x := range []struct {
		name string
		do   func(http.Header) (int, http.Header, map[string]any)
	}{
		{"session", func(h http.Header) (int, http.Header, map[string]any) { return p.do(sid, bad, h) }},
		{"stateless", func(h http.Header) (int, http.Header, map[string]any) {
			h.Set(HeaderProtocolVersion, LegacyProtocolVersion)
			return sp.do("", bad, h)
		}},
	} {
		if st, _, m := x.do(http.Header{}); st != http.StatusOK || errorCode(t, m) != CodeInvalidParams {
			t.Errorf("%s, no Mcp-Method: %d %v, want 200 and invalid params", x.name, st, m)
		}
		if st, _, m := x.do(http.Header{HeaderMethod: {MethodToolsCall}}); st != http.StatusOK || errorCode(t, m) != CodeInvalidParams {
			t.Errorf("%s, agreeing Mcp-Method: %d %v, want 200 and invalid params", x.name, st, m)
		}
		if st, _, m := x.do(http.Header{HeaderMethod: {MethodToolsList}}); st != http.StatusBadRequest || errorCode(t, m) != CodeHeaderMismatch {
			t.Errorf("%s, contradicting Mcp-Method: %d %v, want 400 and a header mismatch", x.name, st, m)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("the tool ran %d times", n)
	}
}
