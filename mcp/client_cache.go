package mcp

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/jsonrpc"
)

// The client's response cache (SEP-2549). A server gives the complete
// results of server/discover, tools/list, prompts/list, resources/list,
// resources/templates/list and resources/read a freshness hint (ttlMs)
// and a scope (cacheScope). The Client keeps each such result, page by
// page and resource by resource, for ttlMs and answers the same request
// from it without sending anything while it is fresh. The
// notifications it receives (on a Listen stream, on a legacy session's
// streams) drop what they make stale. See docs/design/client-cache.md.

// ClientCache is where a Client keeps the results it may serve again
// (see CacheOptions.Store). Keys are opaque strings built by the
// Client: a namespace naming the server, the method, the parameters
// that select the result, and the scope (public, or private to a
// principal). An implementation must be safe for concurrent use, may
// drop any entry at any time (it is a cache), and must treat the bytes
// it is given and gives back as read-only. It need not look at Expires:
// the Client checks freshness with its own clock and deletes what it
// finds stale; a store may use Expires to drop entries early (an
// external store's own TTL).
type ClientCache interface {
	// Get returns the entry stored under key.
	Get(key string) (CacheEntry, bool)
	// Set stores e under key, replacing what was there.
	Set(key string, e CacheEntry)
	// Delete removes the entry under key, if any.
	Delete(key string)
	// Purge removes every entry whose key starts with prefix ("" removes
	// everything).
	Purge(prefix string)
}

// CacheEntry is one cached result: the result object exactly as the
// server sent it, and the instant it stops being fresh.
type CacheEntry struct {
	Result  json.RawMessage
	Expires time.Time
}

// CacheOptions configure the response cache of a Client. The zero value
// caches in a store of the Client's own (NewMemoryCache with the
// default bounds), public and private results alike.
type CacheOptions struct {
	// Disabled turns the cache off: every call sends its request.
	Disabled bool
	// Store holds the entries, and may be shared by several Clients
	// (one NewMemoryCache, or a store outside the process). Nil means a
	// store of this Client alone, bounded by MaxEntries and MaxBytes.
	Store ClientCache
	// Principal names the user (the auth context) the Client speaks
	// for. A result the server marks "private" (or gives no scope, or a
	// scope this SDK does not know) is kept under the principal and
	// served only to a Client naming the same one; a "public" result is
	// served to any Client of the same Namespace. Empty means, for
	// NewHTTPClientTransport with an Authorization header in
	// HTTPClientOptions.Header (as it is when NewClient runs), a digest
	// of that header (the same credentials, the same principal);
	// credentials the Client cannot see (added by the http.Client's
	// transport) are not taken into account: name the Principal then.
	// With a Store given and no principal, private results are not
	// cached at all, so that a shared store never hands one user's
	// private result to another.
	Principal string
	// Namespace names the server in the store's keys, so that Clients of
	// different servers can share one Store. Empty means the endpoint
	// URL for NewHTTPClientTransport, and otherwise a name unique to the
	// Client (nothing is shared between Clients on byte streams unless
	// they name the same Namespace).
	Namespace string
	// MaxEntries and MaxBytes bound the store made when Store is nil (in
	// entries, and in bytes of keys and results); the least recently
	// used entries go first. Zero means 1024 entries and 8 MiB.
	MaxEntries int
	MaxBytes   int64
	// MaxTTL caps the freshness a server may claim for a result. Zero
	// means one hour.
	MaxTTL time.Duration
}

// Defaults of CacheOptions.
const (
	defaultCacheEntries = 1024
	defaultCacheBytes   = 8 << 20
	defaultCacheMaxTTL  = time.Hour
)

type noCacheKey struct{}

// WithoutCache returns a context whose requests are sent even when a
// fresh cached result would answer them: use it where the caller has
// reason to think the server's answer changed (SEP-2549 lets a client
// re-fetch at any time). The fresh answer replaces the cached one as
// any other answer would.
func WithoutCache(ctx context.Context) context.Context {
	return context.WithValue(ctx, noCacheKey{}, true)
}

func cacheBypassed(ctx context.Context) bool {
	b, _ := ctx.Value(noCacheKey{}).(bool)
	return b
}

// Invalidation groups: a notification makes every result of its group
// stale (the SEP-2549 table of methods and notifications).
const (
	groupTools     = iota // tools/list: notifications/tools/list_changed
	groupPrompts          // prompts/list: notifications/prompts/list_changed
	groupResources        // resources/list, resources/templates/list: notifications/resources/list_changed
	groupReads            // resources/read: notifications/resources/updated
	groupDiscover         // server/discover: ttlMs only
	cacheGroups
)

// clientCache is a Client's view of its store.
type clientCache struct {
	store ClientCache
	// ns starts every key of this Client: the namespace and a NUL.
	ns string
	// private is the scope part of the keys of private results; "" when
	// they are not cached.
	private string
	maxTTL  time.Duration
	// gen counts the invalidations of each group, so that a result
	// fetched across one is not stored (see remember).
	gen [cacheGroups]atomic.Uint64
}

const cachePublicScope = "public"

// localNamespaces numbers the Clients whose namespace is their own.
var localNamespaces atomic.Uint64

func newClientCache(o CacheOptions, t ClientTransport) *clientCache {
	if o.Disabled {
		return nil
	}
	cc := &clientCache{store: o.Store, maxTTL: o.MaxTTL}
	if cc.maxTTL <= 0 {
		cc.maxTTL = defaultCacheMaxTTL
	}
	ns := o.Namespace
	if ns == "" {
		if ht, ok := t.(*httpClientTransport); ok {
			ns = ht.url
		} else {
			ns = "local/" + strconv.FormatUint(localNamespaces.Add(1), 10)
		}
	}
	cc.ns = ns + "\x00"
	principal := o.Principal
	if principal == "" {
		principal = authPrincipal(t)
	}
	if cc.store == nil {
		cc.store = NewMemoryCache(o.MaxEntries, o.MaxBytes)
		cc.private = "private\x00" + principal
	} else if principal != "" {
		cc.private = "private\x00" + principal
	}
	return cc
}

// authPrincipal is the principal of an HTTP transport that sends a fixed
// Authorization header (HTTPClientOptions.Header): a digest of the
// header's values, so that Clients with different credentials keep
// their private results apart on a shared store and the credentials
// themselves never reach a store's keys. "" for other transports.
func authPrincipal(t ClientTransport) string {
	ht, ok := t.(*httpClientTransport)
	if !ok {
		return ""
	}
	vs := ht.extra.Values("Authorization")
	if len(vs) == 0 {
		return ""
	}
	h := sha256.New()
	for _, v := range vs {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return "authorization:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// base is the key of a request without its scope part: namespace,
// method and the parameter selecting the result (a cursor or a URI as
// JSON text; "" for none), each ending with a NUL (a JSON text holds no
// raw NUL, so no key is a prefix of another by accident).
func (cc *clientCache) base(method string, param []byte) string {
	b := make([]byte, 0, len(cc.ns)+len(method)+len(param)+2)
	b = append(b, cc.ns...)
	b = append(b, method...)
	b = append(b, 0)
	b = append(b, param...)
	b = append(b, 0)
	return string(b)
}

// lookup returns a fresh cached result for the request keyed base: this
// principal's private one first, then a public one.
func (cc *clientCache) lookup(base string, now time.Time) ([]byte, bool) {
	if cc.private != "" {
		if r, ok := cc.fresh(base+cc.private, now); ok {
			return r, true
		}
	}
	return cc.fresh(base+cachePublicScope, now)
}

func (cc *clientCache) fresh(key string, now time.Time) ([]byte, bool) {
	e, ok := cc.store.Get(key)
	if !ok {
		return nil, false
	}
	if !now.Before(e.Expires) || jsonrpc.KindOf(e.Result) != jsonrpc.KindObject {
		cc.store.Delete(key)
		return nil, false
	}
	return e.Result, true
}

// remember stores a complete result fetched for the request keyed base
// when its hints allow: a positive ttlMs (capped at MaxTTL), and for a
// private result a principal to keep it under. gen is the group's
// generation before the request was sent: a result fetched across an
// invalidation may be stale already, so it is not kept.
func (cc *clientCache) remember(group int, base string, raw []byte, gen uint64, now time.Time) {
	ttl, scope, ok := cacheHints(raw)
	if !ok {
		return
	}
	public := scope == CachePublic
	key := base + cachePublicScope
	if !public {
		if cc.private == "" {
			return
		}
		key = base + cc.private
	}
	if ttl <= 0 {
		// Immediately stale: what was kept for this request is stale too.
		cc.store.Delete(key)
		return
	}
	if cc.gen[group].Load() != gen {
		return
	}
	ttl = min(ttl, cc.maxTTL)
	cc.store.Set(key, CacheEntry{Result: bytes.Clone(raw), Expires: now.Add(ttl)})
	if public && cc.private != "" {
		// A private copy would shadow the newer public one.
		cc.store.Delete(base + cc.private)
	}
	if cc.gen[group].Load() != gen {
		// Invalidated while storing: the purge may have run before Set.
		cc.store.Delete(key)
	}
}

// cacheHints reads ttlMs and cacheScope of a result (SEP-2549: a
// missing, negative or unreadable ttlMs counts as 0). ok is false for
// a result that is not complete.
func cacheHints(raw []byte) (ttl time.Duration, scope CacheScope, ok bool) {
	ok = true
	_ = jsonrpc.Fields(raw, func(k, v []byte) error {
		switch string(jsonrpc.Key(k)) {
		case "ttlMs":
			v = jsonrpc.TrimSpace(v)
			if jsonrpc.KindOf(v) != jsonrpc.KindNumber {
				return nil
			}
			ms, err := jsonrpc.ParseNumber(v)
			if err != nil || !(ms > 0) {
				return nil
			}
			if ms >= float64(math.MaxInt64/int64(time.Millisecond)) {
				ttl = time.Duration(math.MaxInt64)
			} else {
				ttl = time.Duration(ms * float64(time.Millisecond))
			}
		case "cacheScope":
			s, _ := jsonrpc.String(v)
			scope = CacheScope(s)
		case "resultType":
			switch string(jsonrpc.TrimSpace(v)) {
			case `"complete"`, "null":
			default:
				ok = false
			}
		}
		return nil
	})
	return ttl, scope, ok
}

// invalidate drops what a notification makes stale; params are the
// notification's (for resources/updated, its uri).
func (cc *clientCache) invalidate(method string, params []byte) {
	switch method {
	case NotificationToolListChanged:
		cc.purge(groupTools, MethodToolsList)
	case notificationPromptListChanged:
		cc.purge(groupPrompts, methodPromptsList)
	case notificationResourceListChanged:
		cc.gen[groupResources].Add(1)
		cc.store.Purge(cc.ns + MethodResourcesList + "\x00")
		cc.store.Purge(cc.ns + methodResourceTemplatesList + "\x00")
	case NotificationResourceUpdated:
		cc.gen[groupReads].Add(1)
		uri, ok := updatedURI(params)
		if !ok {
			cc.store.Purge(cc.ns + MethodResourcesRead + "\x00")
			return
		}
		cc.store.Purge(cc.base(MethodResourcesRead, jsonrpc.AppendString(nil, uri)))
	}
}

// purge drops every result of method (all pages, all scopes).
func (cc *clientCache) purge(group int, method string) {
	cc.gen[group].Add(1)
	cc.store.Purge(cc.ns + method + "\x00")
}

// purgeAll drops every result of the Client's namespace.
func (cc *clientCache) purgeAll() {
	for g := range cc.gen {
		cc.gen[g].Add(1)
	}
	cc.store.Purge(cc.ns)
}

func updatedURI(params []byte) (string, bool) {
	if jsonrpc.KindOf(params) != jsonrpc.KindObject {
		return "", false
	}
	var uri string
	found := false
	_ = jsonrpc.Fields(params, func(k, v []byte) error {
		if string(jsonrpc.Key(k)) == "uri" {
			uri, found = jsonString(v)
		}
		return nil
	})
	return uri, found
}

// InvalidateCache drops every result the Client has cached (in a shared
// store: every result of its Namespace, whoever fetched it), so that
// each is fetched again on next use.
func (c *Client) InvalidateCache() {
	if c.cache != nil {
		c.cache.purgeAll()
	}
}

// invalidateFor drops what a notification the Client received makes
// stale.
func (c *Client) invalidateFor(method string, params []byte) {
	if c.cache == nil {
		return
	}
	switch method {
	case NotificationToolListChanged, notificationPromptListChanged, notificationResourceListChanged, NotificationResourceUpdated:
		c.cache.invalidate(method, params)
	}
}

// cached answers a cacheable request (method with its selecting
// parameter param) from the cache when a fresh result is there, and
// otherwise sends it with fetch and keeps what the hints allow. fetch
// reports whether its result may be kept (a resources/read that needed
// input may not: results of retries are never cached).
func (c *Client) cached(ctx context.Context, group int, method string, param []byte, fetch func(ctx context.Context) ([]byte, bool, error)) ([]byte, error) {
	cc := c.cache
	if cc == nil {
		raw, _, err := fetch(ctx)
		return raw, err
	}
	base := cc.base(method, param)
	if !cacheBypassed(ctx) {
		if raw, ok := cc.lookup(base, c.now()); ok {
			return raw, nil
		}
	}
	gen := cc.gen[group].Load()
	raw, keep, err := fetch(ctx)
	if err != nil {
		if param != nil && group != groupReads && ErrorCode(err) == CodeInvalidParams {
			// A cursor the server no longer takes: the pages kept may not
			// fit together any more (SEP-2549).
			cc.purge(group, method)
		}
		return nil, err
	}
	if keep {
		cc.remember(group, base, raw, gen, c.now())
	}
	return raw, nil
}

// MemoryCache is an in-memory ClientCache bounded in entries and bytes,
// evicting the least recently used entries first. One may be shared by
// the Clients of a process (see CacheOptions.Store). It is safe for
// concurrent use.
type MemoryCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int64
	bytes      int64
	lru        list.List // of *memEntry, most recently used first
	entries    map[string]*list.Element
}

type memEntry struct {
	key  string
	e    CacheEntry
	size int64
}

// memEntryOverhead is what an entry costs beyond its key and result,
// roughly (list element, map slot, entry).
const memEntryOverhead = 128

// NewMemoryCache returns an empty MemoryCache holding at most maxEntries
// entries and maxBytes bytes of keys and results (zero or negative:
// 1024 entries, 8 MiB). A result larger than maxBytes is not kept.
func NewMemoryCache(maxEntries int, maxBytes int64) *MemoryCache {
	if maxEntries <= 0 {
		maxEntries = defaultCacheEntries
	}
	if maxBytes <= 0 {
		maxBytes = defaultCacheBytes
	}
	return &MemoryCache{maxEntries: maxEntries, maxBytes: maxBytes, entries: map[string]*list.Element{}}
}

// Get returns the entry under key and marks it recently used.
func (m *MemoryCache) Get(key string) (CacheEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.entries[key]
	if !ok {
		return CacheEntry{}, false
	}
	m.lru.MoveToFront(el)
	return el.Value.(*memEntry).e, true
}

// Set stores e under key, evicting the least recently used entries
// beyond the bounds.
func (m *MemoryCache) Set(key string, e CacheEntry) {
	size := int64(len(key)+len(e.Result)) + memEntryOverhead
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[key]; ok {
		m.remove(el)
	}
	if size > m.maxBytes {
		return
	}
	m.entries[key] = m.lru.PushFront(&memEntry{key: key, e: e, size: size})
	m.bytes += size
	for len(m.entries) > m.maxEntries || m.bytes > m.maxBytes {
		m.remove(m.lru.Back())
	}
}

// Delete removes the entry under key.
func (m *MemoryCache) Delete(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.entries[key]; ok {
		m.remove(el)
	}
}

// Purge removes every entry whose key starts with prefix.
func (m *MemoryCache) Purge(prefix string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, el := range m.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			m.remove(el)
		}
	}
}

// Entries returns the number of entries held (what NewMemoryCache's
// maxEntries bounds).
func (m *MemoryCache) Entries() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.entries)
}

// Bytes returns the bytes held (keys, results and a fixed overhead per
// entry), as counted against NewMemoryCache's maxBytes.
func (m *MemoryCache) Bytes() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes
}

func (m *MemoryCache) remove(el *list.Element) {
	me := m.lru.Remove(el).(*memEntry)
	delete(m.entries, me.key)
	m.bytes -= me.size
}
