package mcp

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// Decoding of request params. Every params object is walked once with
// the exact-key scanner: members are matched case-sensitively, a repeated
// member or one that equals a known member under encoding/json's case
// folding (jsonrpc.EqualFold: "Name", "nameſ"... "Kind" for "\u212Aind")
// without being it is rejected (-32602 naming it), unknown members are
// ignored. Values are decoded only as far as the server needs them;
// arguments stay raw, but an arguments object repeating a member at any
// depth is rejected before anything binds, digests or decodes it. See
// docs/design/decoding.md.

func paramsError(format string, args ...string) *Error {
	msg := format
	for _, a := range args {
		msg = strings.Replace(msg, "%s", a, 1)
	}
	return jsonrpc.NewError(CodeInvalidParams, "Invalid params: "+msg)
}

// scanObject walks obj, matching member names against names. fn gets the
// index of the matched name and the raw value.
func scanObject(obj []byte, where string, names []string, fn func(i int, v []byte) *Error) *Error {
	var seen uint64
	var bad *Error
	err := jsonrpc.Fields(obj, func(rawKey, v []byte) error {
		key := jsonrpc.Key(rawKey)
		for i, n := range names {
			if string(key) == n {
				if seen&(1<<i) != 0 {
					bad = paramsError("duplicate member \"%s\" in %s", n, where)
					return errStopScan
				}
				seen |= 1 << i
				if e := fn(i, v); e != nil {
					bad = e
					return errStopScan
				}
				return nil
			}
			if jsonrpc.EqualFold(key, n) {
				bad = paramsError("member \"%s\" in %s differs from \"%s\" only in case", jsonrpc.Clip(key), where, n)
				return errStopScan
			}
		}
		return nil
	})
	if bad != nil {
		return bad
	}
	if err != nil {
		return paramsError("%s must be an object", where)
	}
	return nil
}

// checkArguments rejects an arguments object in which some object, at
// any depth, repeats a member (names compared after resolving escapes,
// as encoding/json reads them): two texts that digest alike would
// otherwise decode differently, by member order.
func checkArguments(v []byte) *Error {
	if name, dup := jsonrpc.DuplicateMember(v); dup {
		return paramsError("duplicate member \"%s\" in arguments", jsonrpc.Clip(name))
	}
	return nil
}

func decodeString(v []byte, field string) (string, *Error) {
	s, ok := jsonrpc.String(v)
	if !ok {
		return "", paramsError("%s must be a string", field)
	}
	return s, nil
}

var metaNames = []string{metaProtocolVersion, MetaClientCapabilities, metaClientInfo, metaLogLevel, metaProgressToken}

// metaPresence records which required _meta members were present.
type metaPresence struct {
	meta, version, caps bool
}

func decodeMeta(v []byte, m *RequestMeta, p *metaPresence) *Error {
	if jsonrpc.KindOf(v) != jsonrpc.KindObject {
		return paramsError("_meta must be an object")
	}
	p.meta = true
	m.Raw = v
	return scanObject(v, "_meta", metaNames, func(i int, v []byte) *Error {
		switch i {
		case 0:
			s, e := decodeString(v, "_meta."+metaProtocolVersion)
			if e != nil {
				return e
			}
			m.ProtocolVersion, p.version = s, true
		case 1:
			if err := decodeClientCaps(v, &m.ClientCapabilities); err != nil {
				return err
			}
			p.caps = true
		case 2:
			if jsonrpc.KindOf(v) == jsonrpc.KindNull {
				return nil
			}
			info, ok := decodeImplementation(v)
			if !ok {
				return paramsError("_meta.%s must be an Implementation object", metaClientInfo)
			}
			m.ClientInfo = info
		case 3:
			s, e := decodeString(v, "_meta."+metaLogLevel)
			if e != nil {
				return e
			}
			if !LoggingLevel(s).valid() {
				return paramsError("_meta.%s: unknown logging level", metaLogLevel)
			}
			m.LogLevel = LoggingLevel(s)
		case 4:
			switch jsonrpc.KindOf(v) {
			case jsonrpc.KindString:
			case jsonrpc.KindNumber:
				if _, e := jsonrpc.ParseID(v); e != nil {
					return paramsError("_meta.progressToken must be a string or an integer")
				}
			default:
				return paramsError("_meta.progressToken must be a string or an integer")
			}
			m.ProgressToken = progressToken(v)
		}
		return nil
	})
}

// progressToken keeps a token as sent, except that a string holding
// invalid UTF-8 is re-encoded as encoding/json decodes it (U+FFFD), so
// that the notifications echoing it are valid JSON text.
func progressToken(v []byte) json.RawMessage {
	v = jsonrpc.TrimSpace(v)
	if jsonrpc.KindOf(v) == jsonrpc.KindString && !utf8.Valid(v) {
		s, _ := jsonrpc.String(v)
		return jsonrpc.AppendString(nil, s)
	}
	return json.RawMessage(v)
}

var capNames = []string{"elicitation", "sampling", "roots", "experimental", "extensions"}

func decodeClientCaps(v []byte, c *ClientCapabilities) *Error {
	const where = "_meta." + MetaClientCapabilities
	if jsonrpc.KindOf(v) != jsonrpc.KindObject {
		return paramsError("%s must be an object", where)
	}
	return scanObject(v, where, capNames, func(i int, v []byte) *Error {
		if jsonrpc.KindOf(v) != jsonrpc.KindObject {
			return paramsError("%s.%s must be an object", where, capNames[i])
		}
		switch i {
		case 0:
			e := new(ElicitationCapabilities)
			if err := scanObject(v, where+".elicitation", []string{"form", "url"}, func(i int, v []byte) *Error {
				if i == 0 {
					e.Form = json.RawMessage(v)
				} else {
					e.URL = json.RawMessage(v)
				}
				return nil
			}); err != nil {
				return err
			}
			c.Elicitation = e
		case 1:
			s := new(SamplingCapabilities)
			if err := scanObject(v, where+".sampling", []string{"context", "tools"}, func(i int, v []byte) *Error {
				if i == 0 {
					s.Context = json.RawMessage(v)
				} else {
					s.Tools = json.RawMessage(v)
				}
				return nil
			}); err != nil {
				return err
			}
			c.Sampling = s
		case 2:
			r := new(RootsCapabilities)
			if err := scanObject(v, where+".roots", []string{"listChanged"}, func(_ int, v []byte) *Error {
				r.ListChanged = string(jsonrpc.TrimSpace(v)) == "true"
				return nil
			}); err != nil {
				return err
			}
			c.Roots = r
		case 3:
			if json.Unmarshal(v, &c.Experimental) != nil {
				return paramsError("%s.experimental must map names to objects", where)
			}
		case 4:
			if json.Unmarshal(v, &c.Extensions) != nil {
				return paramsError("%s.extensions must map names to objects", where)
			}
		}
		return nil
	})
}

func decodeInputResponses(v []byte) (InputResponses, *Error) {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindNull:
		return nil, nil
	case jsonrpc.KindObject:
	default:
		return nil, paramsError("inputResponses must be an object")
	}
	out := make(InputResponses)
	var bad *Error
	_ = jsonrpc.Fields(v, func(k, val []byte) error {
		key := string(jsonrpc.Key(k))
		if _, dup := out[key]; dup {
			bad = paramsError("duplicate key \"%s\" in inputResponses", key)
			return errStopScan
		}
		out[key] = json.RawMessage(val)
		return nil
	})
	return out, bad
}

func decodeRequestState(v []byte, r *retryParams) {
	switch jsonrpc.KindOf(v) {
	case jsonrpc.KindNull:
		r.state = stateAbsent
	case jsonrpc.KindString:
		s, ok := jsonrpc.String(v)
		if !ok {
			r.state = stateInvalid
			return
		}
		r.RequestState, r.state = s, stateString
	default:
		r.state = stateInvalid
	}
}

// paramsDecoder decodes the params of one method. raw is nil when the
// request had no params.
type paramsDecoder func(raw []byte, p *metaPresence) (Params, *Error)

var (
	callToolNames  = []string{"_meta", "name", "arguments", "inputResponses", "requestState"}
	getPromptNames = []string{"_meta", "name", "arguments", "inputResponses", "requestState"}
	readNames      = []string{"_meta", "uri", "inputResponses", "requestState"}
	listNames      = []string{"_meta", "cursor"}
	metaOnlyNames  = []string{"_meta"}
	completeNames  = []string{"_meta", "ref", "argument", "context"}
	listenNames    = []string{"_meta", "notifications"}
)

// decodeNamed decodes the members tools/call and prompts/get share;
// arguments, when present and not null, go to args.
func decodeNamed(raw []byte, p *metaPresence, names []string, meta *RequestMeta, name *string, rp *retryParams, args func(v []byte) *Error) *Error {
	var hasName bool
	err := scanObject(raw, "params", names, func(i int, v []byte) *Error {
		var e *Error
		switch i {
		case 0:
			e = decodeMeta(v, meta, p)
		case 1:
			*name, e = decodeString(v, "name")
			hasName = true
		case 2:
			switch jsonrpc.KindOf(v) {
			case jsonrpc.KindObject:
				e = args(v)
			case jsonrpc.KindNull:
			default:
				e = paramsError("arguments must be an object")
			}
		case 3:
			rp.InputResponses, e = decodeInputResponses(v)
		case 4:
			decodeRequestState(v, rp)
		}
		return e
	})
	if err == nil && p.meta && !hasName {
		err = paramsError("missing name")
	}
	return err
}

func decodeCallTool(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(CallToolRequest)
	err := decodeNamed(raw, p, callToolNames, &r.Meta, &r.Name, &r.retryParams, func(v []byte) *Error {
		if e := checkArguments(v); e != nil {
			return e
		}
		r.Arguments = json.RawMessage(v)
		return nil
	})
	r.Params = json.RawMessage(raw)
	return r, err
}

func decodeGetPrompt(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(GetPromptRequest)
	err := decodeNamed(raw, p, getPromptNames, &r.Meta, &r.Name, &r.retryParams, func(v []byte) *Error {
		if e := checkArguments(v); e != nil {
			return e
		}
		r.argsRaw = json.RawMessage(v)
		if json.Unmarshal(v, &r.Arguments) != nil {
			return paramsError("arguments must map names to strings")
		}
		return nil
	})
	return r, err
}

func decodeReadResource(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(ReadResourceRequest)
	var hasURI bool
	err := scanObject(raw, "params", readNames, func(i int, v []byte) *Error {
		var e *Error
		switch i {
		case 0:
			e = decodeMeta(v, &r.Meta, p)
		case 1:
			r.URI, e = decodeString(v, "uri")
			hasURI = true
		case 2:
			r.InputResponses, e = decodeInputResponses(v)
		case 3:
			decodeRequestState(v, &r.retryParams)
		}
		return e
	})
	if err == nil && p.meta && !hasURI {
		err = paramsError("missing uri")
	}
	return r, err
}

func decodeList(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(ListRequest)
	err := scanObject(raw, "params", listNames, func(i int, v []byte) *Error {
		if i == 0 {
			return decodeMeta(v, &r.Meta, p)
		}
		if jsonrpc.KindOf(v) == jsonrpc.KindNull {
			return nil
		}
		s, e := decodeString(v, "cursor")
		r.Cursor = &s
		return e
	})
	return r, err
}

func decodeDiscover(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(discoverRequest)
	err := scanObject(raw, "params", metaOnlyNames, func(_ int, v []byte) *Error {
		return decodeMeta(v, &r.Meta, p)
	})
	return r, err
}

func decodeCompleteParams(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(CompleteRequest)
	var hasRef, hasArg bool
	err := scanObject(raw, "params", completeNames, func(i int, v []byte) *Error {
		switch i {
		case 0:
			return decodeMeta(v, &r.Meta, p)
		case 1:
			hasRef = true
			if jsonrpc.KindOf(v) != jsonrpc.KindObject || json.Unmarshal(v, &r.Ref) != nil {
				return paramsError("ref must be a prompt or resource template reference")
			}
			switch r.Ref.Type {
			case "ref/prompt":
				if r.Ref.Name == "" {
					return paramsError("ref.name is required for ref/prompt")
				}
			case "ref/resource":
				if r.Ref.URI == "" {
					return paramsError("ref.uri is required for ref/resource")
				}
			default:
				return paramsError("ref.type must be ref/prompt or ref/resource")
			}
		case 2:
			hasArg = true
			if jsonrpc.KindOf(v) != jsonrpc.KindObject || json.Unmarshal(v, &r.Argument) != nil {
				return paramsError("argument must be an object with string name and value")
			}
		case 3:
			if jsonrpc.KindOf(v) == jsonrpc.KindNull {
				return nil
			}
			r.Context = new(CompleteContext)
			if jsonrpc.KindOf(v) != jsonrpc.KindObject || json.Unmarshal(v, r.Context) != nil {
				return paramsError("context.arguments must map names to strings")
			}
		}
		return nil
	})
	if err == nil && p.meta && !hasRef {
		err = paramsError("missing ref")
	}
	if err == nil && p.meta && !hasArg {
		err = paramsError("missing argument")
	}
	return r, err
}

func decodeListen(raw []byte, p *metaPresence) (Params, *Error) {
	r := new(ListenRequest)
	var hasFilter bool
	err := scanObject(raw, "params", listenNames, func(i int, v []byte) *Error {
		if i == 0 {
			return decodeMeta(v, &r.Meta, p)
		}
		hasFilter = true
		if jsonrpc.KindOf(v) != jsonrpc.KindObject || json.Unmarshal(v, &r.Notifications) != nil {
			return paramsError("notifications must be a subscription filter object")
		}
		return nil
	})
	if err == nil && p.meta && !hasFilter {
		err = paramsError("missing notifications")
	}
	return r, err
}

var implementationNames = []string{"name", "version", "title", "description", "websiteUrl"}

// decodeImplementation decodes clientInfo, sent on every request, with
// the scanner; an object with members beyond the plain strings (icons)
// goes through encoding/json. A member folding onto one of the plain
// names without being it (or a repeated one) makes it invalid, as the
// two decoders would read it differently.
func decodeImplementation(v []byte) (*Implementation, bool) {
	if jsonrpc.KindOf(v) != jsonrpc.KindObject {
		return nil, false
	}
	info := new(Implementation)
	fields := [...]*string{&info.Name, &info.Version, &info.Title, &info.Description, &info.WebsiteURL}
	var seen [len(fields)]bool
	plain := true
	err := jsonrpc.Fields(v, func(rk, val []byte) error {
		k := jsonrpc.Key(rk)
		for i, n := range implementationNames {
			if string(k) == n {
				s, ok := jsonrpc.String(val)
				if !ok || seen[i] {
					return errStopScan
				}
				*fields[i], seen[i] = s, true
				return nil
			}
			if jsonrpc.EqualFold(k, n) {
				return errStopScan
			}
		}
		plain = false
		return nil
	})
	if err != nil {
		return nil, false
	}
	if !plain {
		info = new(Implementation)
		if json.Unmarshal(v, info) != nil {
			return nil, false
		}
	}
	return info, true
}
