package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/skills"
)

// loadSkills is a host loading every skill the server lists: it fetches
// and verifies each SKILL.md (skills.Client.Load) and, only for a skill
// that verified, reads its other files (each verified too). A skill that
// fails verification is not loaded and none of its files is read: that is
// the outcome the sep-2640-client-verify-* scenarios look for, so it is
// reported, not returned as an error.
func loadSkills(ctx context.Context, c *mcp.Client) error {
	sc := skills.NewClient(c, nil)
	list, err := sc.List(ctx)
	if err != nil {
		return err
	}
	for _, s := range list {
		l, err := sc.Load(ctx, s)
		var verr *skills.VerificationError
		if errors.As(err, &verr) {
			fmt.Fprintf(os.Stderr, "everything-client: skill %s not loaded: %v\n", s.URI, err)
			continue
		}
		if err != nil {
			return err
		}
		for _, f := range s.Resources {
			if f.URI == s.URI {
				continue
			}
			if _, err := sc.Read(ctx, s, f.URI); err != nil {
				return fmt.Errorf("skill %s: %w", l.Skill.Name(), err)
			}
		}
		fmt.Fprintf(os.Stderr, "everything-client: skill %s loaded (%d files)\n", s.URI, len(s.Resources))
	}
	return nil
}
