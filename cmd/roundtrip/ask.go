package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/mail"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/huh"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// asker answers the server's questions in the terminal: prompts on w,
// answers read line by line from in. One question is asked at a time.
type asker struct {
	mu    sync.Mutex // one question at a time
	w     io.Writer
	in    io.Reader
	once  sync.Once
	lines chan string // closed at the end of input
	model string
	roots []mcp.Root
	echo  bool // input is not a terminal: echo each answer, so the transcript reads well
	// tui: stdin and stderr are terminals: ask with huh's fields (tui.go)
	tui      bool
	tuiTheme *huh.Theme
	tuiOut   io.Writer // where huh draws; a.w when nil
	// onInterrupt, when set, is called on Ctrl-C in a terminal field.
	onInterrupt func()

	wdMu sync.Mutex
	wd   *watchdog // the round in flight, paused while asking
}

func (a *asker) setWatchdog(w *watchdog) {
	a.wdMu.Lock()
	a.wd = w
	a.wdMu.Unlock()
}

// hold pauses the round's watchdog while the user answers; call the
// returned function when done.
func (a *asker) hold() func() {
	a.wdMu.Lock()
	w := a.wd
	a.wdMu.Unlock()
	w.pause()
	return w.resume
}

func newAsker(in io.Reader, w io.Writer, model string, echo bool) *asker {
	return &asker{in: in, w: w, model: model, echo: echo}
}

// Tokens that refuse a form (or a sampling request) at any prompt.
const (
	tokDecline = "!decline"
	tokCancel  = "!cancel"
)

// errSamplingDeclined is the answer to a sampling request the user
// refused: on a 2025-11-25 session it goes back to the server as the
// error of its request; on 2026-07-28 it ends the call.
var errSamplingDeclined = &mcp.Error{Code: -1, Message: "User rejected sampling request"}

// readLine reads one line (without its end). It returns io.EOF at the end
// of input and ctx.Err() when ctx ends first. Input is read by one
// goroutine, so that a blocked read never holds up cancellation.
func (a *asker) readLine(ctx context.Context) (string, error) {
	a.once.Do(func() {
		a.lines = make(chan string)
		go func() {
			defer close(a.lines)
			br := bufio.NewReader(a.in)
			for {
				line, err := br.ReadString('\n')
				if line != "" || err == nil {
					a.lines <- strings.TrimRight(line, "\r\n")
				}
				if err != nil {
					return
				}
			}
		}()
	})
	select {
	case line, ok := <-a.lines:
		if !ok {
			return "", io.EOF
		}
		return line, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ask prints prompt and reads the answer.
func (a *asker) ask(ctx context.Context, prompt string) (string, error) {
	fmt.Fprint(a.w, prompt)
	line, err := a.readLine(ctx)
	switch {
	case errors.Is(err, io.EOF):
		fmt.Fprintln(a.w)
	case err == nil && a.echo:
		fmt.Fprintln(a.w, line)
	}
	return line, err
}

// elicit is the Elicitation handler (live requests of a 2025-11-25
// session).
func (a *asker) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return a.answerElicit(ctx, "", req)
}

// sample is the Sampling handler.
func (a *asker) sample(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return a.answerSampling(ctx, req)
}

// listRoots is the Roots handler: the --root flags.
func (a *asker) listRoots(ctx context.Context, _ *mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.w, "[server asked for roots: sent %d]\n", len(a.roots))
	return &mcp.ListRootsResult{Roots: append([]mcp.Root{}, a.roots...)}, nil
}

// setRoots turns the --root flags into roots.
func (s *session) setRoots() error {
	for _, r := range s.opts.roots {
		uri, name, err := rootURI(r)
		if err != nil {
			return usagef("%v", err)
		}
		s.ui.roots = append(s.ui.roots, mcp.Root{URI: uri, Name: name})
	}
	return nil
}

// answer answers one input request of a round by its kind.
func (a *asker) answer(ctx context.Context, key string, r mcp.InputRequest) (any, error) {
	switch r := r.(type) {
	case *mcp.ElicitRequest:
		return a.answerElicit(ctx, key, r)
	case *mcp.CreateMessageRequest:
		return a.answerSampling(ctx, r)
	case *mcp.ListRootsRequest:
		if a.roots == nil {
			a.mu.Lock()
			fmt.Fprintln(a.w, "[server asked for roots, but no --root was given: sent none]")
			a.mu.Unlock()
			return &mcp.ListRootsResult{Roots: []mcp.Root{}}, nil
		}
		return a.listRoots(ctx, nil)
	}
	return nil, fmt.Errorf("cannot answer a %s request", r.InputMethod())
}

// questionText is what the terminal shows of a question: its text, and
// its key (mcp.Elicit derives one from the question) only when the text
// is empty.
func questionText(key, text string) string {
	if text != "" || key == "" {
		return text
	}
	return "(" + key + ")"
}

// answerElicit asks a form field by field, or asks whether to accept a
// URL.
func (a *asker) answerElicit(ctx context.Context, key string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	defer a.hold()()
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.w, "\n[server asks] %s\n", questionText(key, req.Message))
	if req.Mode == mcp.ElicitModeURL {
		fmt.Fprintf(a.w, "  Open this URL: %s\n", req.URL)
		return a.confirm(ctx, false, &mcp.ElicitResult{Action: mcp.ElicitAccept})
	}
	fields, err := parseForm(req.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("the server's form: %w", err)
	}
	if len(fields) == 0 {
		return a.confirm(ctx, true, &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{}})
	}
	if a.tui {
		fmt.Fprintf(a.w, "  Fill in the form (%s or %s in a text field refuses it; Ctrl-C quits).\n", tokDecline, tokCancel)
	} else {
		fmt.Fprintf(a.w, "  Fill in the form (an empty line keeps the default; %s or %s refuses it).\n", tokDecline, tokCancel)
	}
	content := map[string]any{}
	for _, f := range fields {
		if !a.tui {
			f.describe(a.w)
		}
		for {
			var line string
			var err error
			if a.tui {
				line, err = a.askFieldTUI(ctx, f)
			} else {
				line, err = a.ask(ctx, "  "+f.prompt())
			}
			if errors.Is(err, io.EOF) {
				fmt.Fprintln(a.w, "  (end of input: cancelled)")
				return &mcp.ElicitResult{Action: mcp.ElicitCancel}, nil
			}
			if err != nil {
				return nil, err
			}
			switch strings.TrimSpace(line) {
			case tokDecline:
				return &mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
			case tokCancel:
				return &mcp.ElicitResult{Action: mcp.ElicitCancel}, nil
			}
			v, set, err := f.parse(line)
			if err != nil {
				fmt.Fprintf(a.w, "  invalid: %v\n", err)
				continue
			}
			if set {
				content[f.name] = v
			}
			break
		}
	}
	return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}, nil
}

// answerSampling shows the conversation and reads the reply.
func (a *asker) answerSampling(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	defer a.hold()()
	a.mu.Lock()
	defer a.mu.Unlock()
	fmt.Fprintf(a.w, "\n[server asks for a model reply] (at most %d tokens)\n", req.MaxTokens)
	if req.ModelPreferences != nil && len(req.ModelPreferences.Hints) > 0 {
		var names []string
		for _, h := range req.ModelPreferences.Hints {
			names = append(names, h.Name)
		}
		fmt.Fprintf(a.w, "  model hints: %s\n", strings.Join(names, ", "))
	}
	if req.SystemPrompt != "" {
		fmt.Fprintf(a.w, "  system: %s\n", indentRest(req.SystemPrompt, "          "))
	}
	for _, m := range req.Messages {
		for _, c := range m.Content {
			fmt.Fprintf(a.w, "  %s: %s\n", m.Role, indentRest(contentText(c), "    "))
		}
	}
	if a.tui {
		text, err := a.replyTUI(ctx)
		if err != nil {
			return nil, err
		}
		if text == "" {
			fmt.Fprintln(a.w, "  (refused)")
			return nil, errSamplingDeclined
		}
		return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: a.model, StopReason: "endTurn",
			Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
	fmt.Fprintf(a.w, "  Type the reply, then an empty line (%s refuses):\n", tokDecline)
	var lines []string
	for {
		line, err := a.ask(ctx, "  > ")
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(lines) == 0 && strings.TrimSpace(line) == tokDecline {
			return nil, errSamplingDeclined
		}
		if line == "" {
			if len(lines) == 0 {
				continue
			}
			break
		}
		lines = append(lines, line)
	}
	if len(lines) == 0 {
		fmt.Fprintln(a.w, "  (end of input: refused)")
		return nil, errSamplingDeclined
	}
	return &mcp.CreateMessageResult{Role: mcp.RoleAssistant, Model: a.model, StopReason: "endTurn",
		Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(lines, "\n")}}}, nil
}

func indentRest(s, indent string) string {
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// ---- forms ----

// choice is one allowed value of an enum field, with its title.
type choice struct{ value, title string }

// field is one property of a form's flat schema.
type field struct {
	name, title, description string
	typ                      string // string, number, integer, boolean, array
	format, pattern          string
	re                       *regexp.Regexp // pattern compiled once; nil when none or not RE2
	required                 bool
	choices                  []choice // string enums, or the items of a multi-select
	min, max                 *float64 // minimum/maximum, minLength/maxLength, minItems/maxItems
	def                      any      // the decoded default; nil when none
	writeOnly                bool     // a secret: masked in the terminal
}

// The bounds of a form a server asks the user to fill in (its schema is
// the server's, so untrusted): the library's own reader (ElicitRequest.Form)
// holds a form to them; the tests refer to them here.
const (
	maxFormFields       = 256
	maxFormChoices      = 1024
	maxFormPatternBytes = 4096
)

// parseForm reads a requestedSchema into fields, in the order the server
// wrote them, with the library's reader (ElicitRequest.Form), so within
// its bounds.
func parseForm(schema any) ([]*field, error) {
	form, err := (&mcp.ElicitRequest{RequestedSchema: schema}).Form()
	if err != nil {
		return nil, err
	}
	fields := make([]*field, 0, len(form.Fields))
	for _, ff := range form.Fields {
		f := &field{name: ff.Name, title: ff.Title, description: ff.Description, typ: ff.Type,
			format: ff.Format, pattern: ff.Pattern, required: ff.Required, def: ff.Default, writeOnly: ff.WriteOnly}
		for _, o := range ff.Options {
			if f.typ != "string" && f.typ != "array" {
				break // the terminal offers choices for strings and multi-selects
			}
			f.choices = append(f.choices, choice{value: o.Value, title: o.Title})
		}
		count := func(p *int) *float64 {
			if p == nil {
				return nil
			}
			x := float64(*p)
			return &x
		}
		switch f.typ {
		case "string":
			f.min, f.max = count(ff.MinLength), count(ff.MaxLength)
		case "number", "integer":
			f.min, f.max = ff.Minimum, ff.Maximum
		case "array":
			f.min, f.max = count(ff.MinItems), count(ff.MaxItems)
		}
		if f.pattern != "" {
			f.re, _ = regexp.Compile(f.pattern) // once; nil when not RE2
		}
		fields = append(fields, f)
	}
	return fields, nil
}

// describe prints what the field is before its prompt.
func (f *field) describe(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "  • %s", f.name)
	if f.title != "" && f.title != f.name {
		fmt.Fprintf(&b, " — %s", f.title)
	}
	fmt.Fprintf(&b, " (%s)", f.notes())
	if f.description != "" {
		fmt.Fprintf(&b, ": %s", f.description)
	}
	fmt.Fprintln(w, b.String())
	for i, c := range f.choices {
		if c.title != "" && c.title != c.value {
			fmt.Fprintf(w, "      %d) %s (%s)\n", i+1, c.title, c.value)
		} else {
			fmt.Fprintf(w, "      %d) %s\n", i+1, c.value)
		}
	}
}

// notes sums up the field's constraints: "required, integer, 1 to 10".
func (f *field) notes() string {
	var notes []string
	if f.required {
		notes = append(notes, "required")
	} else {
		notes = append(notes, "optional")
	}
	switch f.typ {
	case "array":
		notes = append(notes, "choose any, comma-separated")
	default:
		if len(f.choices) == 0 {
			notes = append(notes, f.typ)
		}
	}
	if f.format != "" {
		notes = append(notes, "format "+f.format)
	}
	if f.min != nil || f.max != nil {
		notes = append(notes, f.rangeNote())
	}
	return strings.Join(notes, ", ")
}

func (f *field) rangeNote() string {
	unit := ""
	switch f.typ {
	case "string":
		unit = " characters"
	case "array":
		unit = " choices"
	}
	num := func(p *float64) string { return strconv.FormatFloat(*p, 'g', -1, 64) }
	switch {
	case f.min != nil && f.max != nil:
		return fmt.Sprintf("%s to %s%s", num(f.min), num(f.max), unit)
	case f.min != nil:
		return fmt.Sprintf("at least %s%s", num(f.min), unit)
	}
	return fmt.Sprintf("at most %s%s", num(f.max), unit)
}

// prompt is the question line of the field.
func (f *field) prompt() string {
	p := f.name
	if f.typ == "boolean" {
		p += " (y/n)"
	}
	if f.def != nil {
		p += " [" + displayValue(f.def) + "]"
	}
	return p + ": "
}

func displayValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case []string:
		return strings.Join(v, ",")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// parse reads one answer. set is false when the field is left out (an
// optional field without a default, left empty).
func (f *field) parse(line string) (v any, set bool, err error) {
	s := strings.TrimSpace(line)
	if s == "" {
		if f.def != nil {
			return f.def, true, nil
		}
		if f.required {
			return nil, false, errors.New("a value is required")
		}
		return nil, false, nil
	}
	switch f.typ {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true", "1":
			return true, true, nil
		case "n", "no", "false", "0":
			return false, true, nil
		}
		return nil, false, errors.New("answer y or n")
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a whole number", s)
		}
		if err := f.checkRange(float64(n)); err != nil {
			return nil, false, err
		}
		return n, true, nil
	case "number":
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false, fmt.Errorf("%q is not a number", s)
		}
		if err := f.checkRange(x); err != nil {
			return nil, false, err
		}
		return x, true, nil
	case "array":
		var picked []string
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			c, err := f.pick(part)
			if err != nil {
				return nil, false, err
			}
			picked = append(picked, c)
		}
		if err := f.checkRange(float64(len(picked))); err != nil {
			return nil, false, err
		}
		return picked, true, nil
	}
	// string
	if len(f.choices) > 0 {
		c, err := f.pick(s)
		if err != nil {
			return nil, false, err
		}
		return c, true, nil
	}
	if err := f.checkRange(float64(utf8.RuneCountInString(line))); err != nil {
		return nil, false, err
	}
	if err := checkFormat(f.format, s); err != nil {
		return nil, false, err
	}
	if f.re != nil && !f.re.MatchString(line) {
		return nil, false, fmt.Errorf("must match %s", f.pattern)
	}
	return line, true, nil
}

// pick finds a choice by its number, value or title.
func (f *field) pick(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.choices) {
		if !f.hasValue(s) {
			return f.choices[n-1].value, nil
		}
	}
	for _, c := range f.choices {
		if c.value == s {
			return c.value, nil
		}
	}
	for _, c := range f.choices {
		if strings.EqualFold(c.value, s) || (c.title != "" && strings.EqualFold(c.title, s)) {
			return c.value, nil
		}
	}
	return "", fmt.Errorf("%q is not one of the choices (type its number or its value)", s)
}

func (f *field) hasValue(s string) bool {
	for _, c := range f.choices {
		if c.value == s {
			return true
		}
	}
	return false
}

func (f *field) checkRange(x float64) error {
	if f.min != nil && x < *f.min || f.max != nil && x > *f.max {
		return fmt.Errorf("must be %s", f.rangeNote())
	}
	return nil
}

func checkFormat(format, s string) error {
	switch format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return errors.New("not an email address")
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" {
			return errors.New("not an absolute URI")
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return errors.New("not a date (YYYY-MM-DD)")
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return errors.New("not a date-time (RFC 3339, e.g. 2026-07-28T09:00:00Z)")
		}
	}
	return nil
}

// confirm asks accept, decline or cancel until answered; accepted is the
// answer to "y" (and to an empty line when emptyAccepts).
func (a *asker) confirm(ctx context.Context, emptyAccepts bool, accepted *mcp.ElicitResult) (*mcp.ElicitResult, error) {
	if a.tui {
		return a.confirmTUI(ctx, accepted)
	}
	for {
		line, err := a.ask(ctx, "  Accept (y), decline (n) or cancel (c)? [y/n/c]: ")
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(a.w, "  (end of input: cancelled)")
			return &mcp.ElicitResult{Action: mcp.ElicitCancel}, nil
		}
		if err != nil {
			return nil, err
		}
		switch answer := strings.ToLower(strings.TrimSpace(line)); answer {
		case "y", "yes", "accept":
			return accepted, nil
		case "n", "no", "decline", tokDecline:
			return &mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
		case "c", "cancel", tokCancel:
			return &mcp.ElicitResult{Action: mcp.ElicitCancel}, nil
		case "":
			if emptyAccepts {
				return accepted, nil
			}
		}
		fmt.Fprintln(a.w, "  please answer y, n or c")
	}
}
