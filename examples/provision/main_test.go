package main

import (
	"strings"
	"testing"
)

func TestProvisionDemo(t *testing.T) {
	var out strings.Builder
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	got := out.String()
	for _, want := range []string{
		"← input_required: 1 question(s)",
		`user asked "Which region should the database live in?"`,
		`user asked "How many GB for \"orders\" in eu-west-1?"`,
		"echoing the",
		"← complete",
		`result: Provisioned "orders" in eu-west-1 with 20 GB.`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "→ tools/call"); n != 3 {
		t.Errorf("%d legs, want 3:\n%s", n, got)
	}
}
