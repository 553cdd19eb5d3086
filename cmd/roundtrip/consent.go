package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/huh"
)

// A file the user did not write does not run a command: a stdio server
// defined by a project file (./.mcp.json) or recorded in a saved call
// (resume FILE) is started only when the user agrees. In a terminal the
// CLI shows the command and where it came from and asks; elsewhere it
// refuses unless --allow-command is given.

// allowCommand asks before starting s.target's command when it comes
// from a file the user did not write (s.commandFrom).
func (s *session) allowCommand() error {
	if s.commandFrom == "" || s.opts.allowCommand {
		return nil
	}
	shown := sanitizeLine(quoteCommand(s.target.Command))
	if s.target.Dir != "" {
		shown += " (in " + sanitizeLine(s.target.Dir) + ")"
	}
	refuse := func(why string) error {
		return usagef("not running %s: the command comes from %s, a file you did not write (%s); give --allow-command to run it, or define the server in your own config (%s)",
			shown, s.commandFrom, why, cmpOr(userConfig(), "roundtrip/config.json in the user config directory"))
	}
	if !s.tty {
		return refuse("not on a terminal, so it cannot ask")
	}
	question := fmt.Sprintf("%s wants to run: %s", s.commandFrom, shown)
	if s.ui.tui {
		run := false
		if err := s.ui.runField(s.ctx, huh.NewConfirm().Title("Run this command?").Description(question).Value(&run)); err != nil {
			return err
		}
		if !run {
			return refuse("you said no")
		}
		return nil
	}
	fmt.Fprintf(s.errw, "roundtrip: %s\n", question)
	line, err := s.ui.ask(s.ctx, "roundtrip: run it? [y/N]: ")
	if errors.Is(err, io.EOF) {
		return refuse("no answer")
	}
	if err != nil {
		return err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return refuse("you said no")
}

// quoteCommand writes a command as a shell would read it back.
func quoteCommand(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`;&|<>()*?[]#~") {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
