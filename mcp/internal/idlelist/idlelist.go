// Package idlelist is an intrusive doubly linked list of idle members,
// oldest first: a member is pushed and unlinked in O(1), so that
// evicting the oldest costs no scan. Package mcp threads its legacy
// HTTP sessions and its HTTP+SSE sessions into one list per party,
// under their registry's lock; the list itself takes no lock.
package idlelist

// Link threads a member into a list; embed it in the member type.
type Link[T any] struct {
	prev, next *T
	idle       bool // in the list
}

// Member is a member type (a pointer to T) with a Link.
type Member[T any] interface {
	*T
	IdleLink() *Link[T]
}

// List is a list of idle members, oldest first. The zero List is empty.
type List[T any, P Member[T]] struct {
	head, tail *T
}

// Oldest returns the member pushed longest ago, nil when the list is
// empty.
func (l *List[T, P]) Oldest() *T { return l.head }

// PushIdle puts x last; an x already in the list stays where it is.
func (l *List[T, P]) PushIdle(x *T) {
	k := P(x).IdleLink()
	if k.idle {
		return
	}
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		P(l.tail).IdleLink().next = x
	} else {
		l.head = x
	}
	l.tail = x
	k.idle = true
}

// UnlinkIdle takes x out of the list, if it is in it.
func (l *List[T, P]) UnlinkIdle(x *T) {
	k := P(x).IdleLink()
	if !k.idle {
		return
	}
	if k.prev != nil {
		P(k.prev).IdleLink().next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		P(k.next).IdleLink().prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next, k.idle = nil, nil, false
}

// Idle reports whether the member is in its list.
func (k *Link[T]) Idle() bool { return k.idle }
