package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/charmbracelet/huh"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Terminal input: when stdin and stderr are both terminals (and --plain
// is not given) the questions are asked with huh's fields: arrow-key
// choices for enums and yes/no, masked input for secret fields, inline
// validation for the rest. Pipes, files and the tests keep the line
// mode. huh draws on stderr (a.w) and reads a.in; the line reader is
// never started in this mode, so the two never compete for stdin.

// secretName matches property names whose values are secrets.
var secretName = regexp.MustCompile(`(?i)(pass(word|wd|phrase)?|secret|token|api[_-]?key|pin)$`)

// secret reports a field whose input is masked: format "password",
// writeOnly, or a name such as password, api_key, token.
func (f *field) secret() bool {
	return f.typ == "string" && len(f.choices) == 0 && (f.format == "password" || f.writeOnly || secretName.MatchString(f.name))
}

// errInterruptedKey is Ctrl-C typed in a terminal field: the terminal is
// in raw mode, so it is a key rather than SIGINT, but it means the same:
// the program stops with status 130.
var errInterruptedKey = errors.New("interrupted (Ctrl-C)")

// runField runs one huh field as a form of its own. Ctrl-C in the form
// comes back as errInterruptedKey.
func (a *asker) runField(ctx context.Context, fld huh.Field) error {
	out := a.tuiOut
	if out == nil {
		out = a.w
	}
	form := huh.NewForm(huh.NewGroup(fld)).WithInput(a.in).WithOutput(out).WithShowHelp(true)
	if a.tuiTheme != nil {
		form = form.WithTheme(a.tuiTheme)
	}
	err := form.RunWithContext(ctx)
	if errors.Is(err, huh.ErrUserAborted) {
		fmt.Fprintln(a.w)
		if a.onInterrupt != nil {
			a.onInterrupt()
		}
		return errInterruptedKey
	}
	return err
}

// askFieldTUI asks one form field and returns the answer as the line
// mode would have read it (f.parse takes it). In a text field !decline
// and !cancel refuse the form, as in the line mode.
func (a *asker) askFieldTUI(ctx context.Context, f *field) (string, error) {
	// huh draws these itself, on the raw terminal: the server's text is
	// sanitized here (the values picked and typed go back unchanged).
	title := f.name
	if f.title != "" && f.title != f.name {
		title += " — " + f.title
	}
	title = sanitizeLine(title)
	desc := f.notes()
	if f.description != "" {
		desc += ": " + f.description
	}
	desc = sanitize(desc)
	var err error
	var line string
	switch {
	case f.typ == "boolean":
		v := f.def == true
		err = a.runField(ctx, huh.NewConfirm().Title(title).Description(desc).Value(&v))
		line = "n"
		if v {
			line = "y"
		}
	case f.typ == "string" && len(f.choices) > 0:
		opts := make([]huh.Option[string], 0, len(f.choices)+1)
		if !f.required && f.def == nil {
			opts = append(opts, huh.NewOption("(leave out)", ""))
		}
		for _, c := range f.choices {
			label := choiceLabel(c)
			opts = append(opts, huh.NewOption(label, c.value))
		}
		if d, ok := f.def.(string); ok {
			line = d
		}
		err = a.runField(ctx, huh.NewSelect[string]().Title(title).Description(desc).Options(opts...).Value(&line))
	case f.typ == "array" && len(f.choices) > 0:
		opts := make([]huh.Option[string], 0, len(f.choices))
		for _, c := range f.choices {
			label := choiceLabel(c)
			opts = append(opts, huh.NewOption(label, c.value))
		}
		var picked []string
		ms := huh.NewMultiSelect[string]().Title(title).Description(desc).Options(opts...).Value(&picked)
		if f.max != nil {
			ms = ms.Limit(int(*f.max))
		}
		err = a.runField(ctx, ms.Validate(func(v []string) error {
			_, _, err := f.parse(strings.Join(v, ","))
			return safeErr(err)
		}))
		line = strings.Join(picked, ",")
	default:
		in := huh.NewInput().Title(title).Description(desc).Value(&line).Validate(func(s string) error {
			if t := strings.TrimSpace(s); t == tokDecline || t == tokCancel {
				return nil
			}
			_, _, err := f.parse(s)
			return safeErr(err)
		})
		if f.def != nil {
			in = in.Placeholder(sanitizeLine(displayValue(f.def)))
		}
		if f.secret() {
			in = in.EchoMode(huh.EchoModePassword)
		}
		err = a.runField(ctx, in)
	}
	if err == nil {
		// huh clears the field when it is done: keep the answer in the
		// transcript (a secret as a mask).
		shown := line
		if f.secret() && line != "" {
			shown = "••••••"
		}
		fmt.Fprintf(a.w, "  %s: %s\n", f.name, shown)
	}
	return line, err
}

// confirmTUI asks accept/decline/cancel with arrow keys.
func (a *asker) confirmTUI(ctx context.Context, accepted *mcp.ElicitResult) (*mcp.ElicitResult, error) {
	action := string(mcp.ElicitAccept)
	err := a.runField(ctx, huh.NewSelect[string]().Title("Your answer").Options(
		huh.NewOption("Accept", string(mcp.ElicitAccept)),
		huh.NewOption("Decline", string(mcp.ElicitDecline)),
		huh.NewOption("Cancel", string(mcp.ElicitCancel))).Value(&action))
	switch {
	case err != nil:
		return nil, err
	case action == string(mcp.ElicitAccept):
		return accepted, nil
	}
	return &mcp.ElicitResult{Action: mcp.ElicitAction(action)}, nil
}

// replyTUI reads a sampling reply in a text area; an empty reply or
// Ctrl-C refuses.
func (a *asker) replyTUI(ctx context.Context) (string, error) {
	var text string
	err := a.runField(ctx, huh.NewText().Title("Reply").Description("an empty reply refuses").Value(&text))
	return strings.TrimSpace(text), err
}

// choiceLabel is an enum choice as a terminal form shows it: its title
// and value, sanitized (the value sent is c.value, unchanged).
func choiceLabel(c choice) string {
	label := c.value
	if c.title != "" && c.title != c.value {
		label = c.title + " (" + c.value + ")"
	}
	return sanitizeLine(label)
}

// safeErr is a validation error as huh draws it: sanitized (it may quote
// the server's pattern).
func safeErr(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(sanitizeLine(err.Error()))
}
