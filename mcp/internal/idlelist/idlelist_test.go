package idlelist

import "testing"

type member struct {
	n int
	Link[member]
}

func (m *member) IdleLink() *Link[member] { return &m.Link }

func order(l *List[member, *member]) []int {
	var got []int
	for x := l.Oldest(); x != nil; x = x.next {
		got = append(got, x.n)
	}
	return got
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The list keeps its members oldest first: a push of a member already
// in it changes nothing, an unlink of one not in it changes nothing,
// and a member moved to the back is the newest.
func TestIdleListKeepsMembersOldestFirst(t *testing.T) {
	t.Parallel()
	var l List[member, *member]
	if l.Oldest() != nil {
		t.Fatal("the zero list is not empty")
	}
	m := []*member{{n: 0}, {n: 1}, {n: 2}}
	for _, x := range m {
		l.PushIdle(x)
	}
	l.PushIdle(m[0])
	if got := order(&l); !equal(got, []int{0, 1, 2}) {
		t.Fatalf("after pushes: %v", got)
	}
	l.UnlinkIdle(m[1])
	l.UnlinkIdle(m[1])
	if got := order(&l); !equal(got, []int{0, 2}) || m[1].Idle() || !m[0].Idle() {
		t.Fatalf("after unlinking the middle: %v", got)
	}
	l.UnlinkIdle(m[0])
	l.PushIdle(m[0])
	if got := order(&l); !equal(got, []int{2, 0}) || l.tail != m[0] {
		t.Fatalf("after moving the oldest to the back: %v", got)
	}
	l.UnlinkIdle(m[0])
	l.UnlinkIdle(m[2])
	if l.Oldest() != nil || l.tail != nil {
		t.Fatal("the emptied list is not empty")
	}
}
