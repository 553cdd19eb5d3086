package main

import "testing"

// A mistyped name within a few edits (a swap of neighbours is one) is
// suggested; a far one is not.
func TestDidYouMeanSuggestsNearNamesOnly(t *testing.T) {
	names := []string{"discover", "tools", "prompts", "resources", "templates", "call", "get", "read", "resume"}
	for _, c := range []struct{ in, want string }{
		{"tols", "tools"}, {"tool", "tools"}, {"toosl", "tools"}, {"calll", "call"}, {"resoruces", "resources"},
		{"discovery", "discover"}, {"xyz", ""}, {"frobnicate", ""},
	} {
		if got := closest(c.in, names); got != c.want {
			t.Errorf("closest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
