package mcp

import (
	"encoding/json"
)

// Protocol versions.
const (
	// LatestProtocolVersion is the revision this package implements.
	LatestProtocolVersion = "2026-07-28"
)

// Reserved _meta keys of 2026-07-28.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	metaProgressToken      = "progressToken"
)

// IdempotencyMetaKey names the _meta member of a tools/call that carries
// a client's idempotency key (a string of 1 to 255 bytes), and, set to
// true in a Tool's Meta, declares that the tool honours one: the server
// answers a retry of a complete call (same principal, tool, key and
// arguments) with the recorded result instead of running it again, and
// refuses the key with other arguments (-32602). No standard names such a
// key (SEP-3182 closed without one): the name is this SDK's own.
const IdempotencyMetaKey = "io.roundtrip/idempotencyKey"

// Meta is an open _meta object.
type Meta map[string]any

// Implementation names a client or server.
type Implementation struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is a sized icon a client may display.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// ClientCapabilities are declared by the client on every request.
// A nil pointer means the capability is absent.
type ClientCapabilities struct {
	Elicitation  *ElicitationCapabilities   `json:"elicitation,omitempty"`
	Sampling     *SamplingCapabilities      `json:"sampling,omitempty"`
	Roots        *RootsCapabilities         `json:"roots,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
	// Raw is the capabilities object as a session's initialize sent it,
	// members this package does not define included (an extension reads
	// its own there); nil on 2026-07-28 requests and for an object over
	// 64 KiB. It is not sent.
	Raw json.RawMessage `json:"-"`
}

// maxRawCapabilities bounds ClientCapabilities.Raw, which a session keeps.
const maxRawCapabilities = 64 << 10

// ElicitationCapabilities: an empty object means form mode only.
type ElicitationCapabilities struct {
	Form json.RawMessage `json:"form,omitempty"`
	URL  json.RawMessage `json:"url,omitempty"`
}

// supportsForm reports whether form-mode elicitation is declared: an empty
// elicitation object, or one with "form".
func (e *ElicitationCapabilities) supportsForm() bool {
	return e != nil && (e.Form != nil || e.URL == nil)
}

// supportsURL reports whether URL-mode elicitation is declared.
func (e *ElicitationCapabilities) supportsURL() bool { return e != nil && e.URL != nil }

// SamplingCapabilities describes sampling support.
type SamplingCapabilities struct {
	Context json.RawMessage `json:"context,omitempty"`
	Tools   json.RawMessage `json:"tools,omitempty"`
}

// RootsCapabilities describes roots support. ListChanged is legacy
// (2025-11-25) and tolerated in 2026-07-28 requests.
type RootsCapabilities struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ServerCapabilities are advertised by server/discover.
type ServerCapabilities struct {
	Completions  *struct{}                  `json:"completions,omitempty"`
	Logging      *struct{}                  `json:"logging,omitempty"`
	Prompts      *ListChangedCapability     `json:"prompts,omitempty"`
	Resources    *ResourcesCapability       `json:"resources,omitempty"`
	Tools        *ListChangedCapability     `json:"tools,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
}

// ListChangedCapability is the shape of the tools and prompts capabilities.
type ListChangedCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability is the shape of the resources capability.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// LoggingLevel is a syslog severity used by notifications/message.
type LoggingLevel string

// Logging levels, from least to most severe.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

func (l LoggingLevel) rank() int {
	switch l {
	case LevelDebug:
		return 0
	case LevelInfo:
		return 1
	case LevelNotice:
		return 2
	case LevelWarning:
		return 3
	case LevelError:
		return 4
	case LevelCritical:
		return 5
	case LevelAlert:
		return 6
	case LevelEmergency:
		return 7
	}
	return -1
}

// RequestMeta is the per-request _meta envelope of 2026-07-28.
type RequestMeta struct {
	ProtocolVersion    string             `json:"io.modelcontextprotocol/protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
	ClientInfo         *Implementation    `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	LogLevel           LoggingLevel       `json:"io.modelcontextprotocol/logLevel,omitempty"`
	// ProgressToken is the raw JSON of the progress token (a string or an
	// integer), nil when the client asked for no progress.
	ProgressToken json.RawMessage `json:"progressToken,omitempty"`
	// Raw is the whole _meta object as received, for keys this type does
	// not name (trace context, vendor keys). Nil on outgoing requests.
	Raw json.RawMessage `json:"-"`
}

// ResultType discriminates results in 2026-07-28.
type ResultType string

// Result types of the core protocol.
const (
	ResultComplete      ResultType = "complete"
	ResultInputRequired ResultType = "input_required"
)

// CacheScope says who may share a cached result.
type CacheScope string

// Cache scopes.
const (
	CachePublic  CacheScope = "public"
	CachePrivate CacheScope = "private"
)

// LegacyProtocolVersion is the newest earlier revision a dual-era server
// also serves (initialize, sessions and server-to-client requests), and
// the one an initialize naming an unknown version is offered. 2025-06-18,
// 2025-03-26 and 2024-11-05 are negotiated too (Server.SupportedVersions).
const LegacyProtocolVersion = "2025-11-25"

// defaultMaxMessageBytes bounds one incoming message on every transport.
const defaultMaxMessageBytes = 4 << 20
