package mcp

// idleLink threads a session into its party's idle list.
type idleLink[T any] struct {
	prev, next *T
	idle       bool // in the list
}

// idleMember is a session type with an idleLink.
type idleMember[T any] interface {
	*T
	link() *idleLink[T]
}

// idleList is a party's idle sessions, oldest first: pushed and
// unlinked in O(1), so that eviction within a party costs no scan (the
// legacy HTTP sessions and the HTTP+SSE sessions, under their
// registry's lock).
type idleList[T any, P idleMember[T]] struct {
	head, tail *T
}

// pushIdle puts x last; an x already in the list stays where it is.
func (l *idleList[T, P]) pushIdle(x *T) {
	k := P(x).link()
	if k.idle {
		return
	}
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		P(l.tail).link().next = x
	} else {
		l.head = x
	}
	l.tail = x
	k.idle = true
}

// unlinkIdle takes x out of the list, if it is in it.
func (l *idleList[T, P]) unlinkIdle(x *T) {
	k := P(x).link()
	if !k.idle {
		return
	}
	if k.prev != nil {
		P(k.prev).link().next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		P(k.next).link().prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next, k.idle = nil, nil, false
}
