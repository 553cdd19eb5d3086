package mcp

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// A registry holds the server's features of one kind: its tools, its
// prompts, its static resources or its resource templates. The Server has
// one of each; registering, removing, looking up, listing and announcing
// a change work the same way for all four.
//
// Keys. An entry is keyed by a string unique within its kind (entry.key):
// the name of a tool or a prompt, the URI of a resource, the URI template
// of a template. Adding an entry replaces the one with the same key.
//
// Order. A registry lists its entries sorted by key (byte order), or, when
// it is ordered, in registration order: resource templates, whose list
// order is the order in which resources/read tries them. Every add stamps
// the entry with the next sequence number, so replacing an entry of an
// ordered registry moves it to the end: a replacement is a new
// registration and is tried after the templates registered before it.
// That is the order templates have always been matched in.
//
// Reads. get is a map lookup under the read lock, and never allocates:
// tools/call does one per request. The list order is a snapshot built by
// the first read after a change and shared by every read until the next
// change, so registering many features costs one sort, not one per
// registration, and listing costs no sort at all. A snapshot is never
// modified: a reader walks it without any lock (template matching, a
// page of a list) and sees the registry as it was at one instant.
//
// Changes. add and a remove that removed something call changed exactly
// once, after the lock is released, with the keys added or removed:
// changed publishes to the hub and the fan-out queue, which have locks of
// their own, and may read the registry. A remove that found none of its
// keys changes nothing and announces nothing.
type registry[E entry[V], V any] struct {
	ordered bool
	changed func(keys []string)

	mu    sync.RWMutex
	items map[string]slot[E]
	seq   uint64                        // the last stamp given
	snap  atomic.Pointer[listing[E, V]] // nil after a change, until the next read
}

// entry is what a registry holds: a feature and its handler.
type entry[V any] interface {
	key() string // unique within the kind
	listed() V   // the feature as its list method shows it
}

type slot[E any] struct {
	seq uint64 // registration stamp: the order of an ordered registry
	e   E
}

// listing is a registry's entries in list order, as of one instant.
// Nothing writes to it once built.
type listing[E, V any] struct {
	keys    []string
	entries []E
	views   []V
}

func newRegistry[E entry[V], V any](ordered bool, changed func(keys []string)) *registry[E, V] {
	return &registry[E, V]{ordered: ordered, changed: changed, items: make(map[string]slot[E])}
}

// add registers e, replacing any entry with the same key, and announces
// the change.
func (r *registry[E, V]) add(e E) {
	k := e.key()
	r.mu.Lock()
	r.seq++
	r.items[k] = slot[E]{seq: r.seq, e: e}
	r.snap.Store(nil)
	r.mu.Unlock()
	r.changed([]string{k})
}

// remove removes the entries with the given keys and returns how many it
// removed; it announces one change when that is not zero.
func (r *registry[E, V]) remove(keys ...string) int {
	var gone []string
	r.mu.Lock()
	for _, k := range keys {
		if _, ok := r.items[k]; ok {
			delete(r.items, k)
			gone = append(gone, k)
		}
	}
	if len(gone) > 0 {
		r.snap.Store(nil)
	}
	r.mu.Unlock()
	if len(gone) > 0 {
		r.changed(gone)
	}
	return len(gone)
}

// get returns the entry with key k, and whether there is one.
func (r *registry[E, V]) get(k string) (E, bool) {
	r.mu.RLock()
	s, ok := r.items[k]
	r.mu.RUnlock()
	return s.e, ok
}

// len returns the number of entries.
func (r *registry[E, V]) len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.items)
}

// inOrder returns the entries in list order (for templates, the order in
// which to try them). The slice is shared: the caller must not modify it.
func (r *registry[E, V]) inOrder() []E { return r.list().entries }

// list returns the current listing, building it on the first read after
// a change.
func (r *registry[E, V]) list() *listing[E, V] {
	if l := r.snap.Load(); l != nil {
		return l
	}
	// Build under the read lock: no change can happen meanwhile, so the
	// listing stored is current. Concurrent readers may each build one;
	// they are equal, and the last one stored wins.
	r.mu.RLock()
	defer r.mu.RUnlock()
	if l := r.snap.Load(); l != nil {
		return l
	}
	type keyed struct {
		k string
		slot[E]
	}
	all := make([]keyed, 0, len(r.items))
	for k, s := range r.items {
		all = append(all, keyed{k, s})
	}
	if r.ordered {
		slices.SortFunc(all, func(a, b keyed) int { return cmp.Compare(a.seq, b.seq) })
	} else {
		slices.SortFunc(all, func(a, b keyed) int { return strings.Compare(a.k, b.k) })
	}
	l := &listing[E, V]{keys: make([]string, len(all)), entries: make([]E, len(all)), views: make([]V, len(all))}
	for i, x := range all {
		l.keys[i], l.entries[i], l.views[i] = x.k, x.e, x.e.listed()
	}
	r.snap.Store(l)
	return l
}
