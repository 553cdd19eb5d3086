package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ---- discover ----

func cmdDiscover(s *session) error {
	c, err := s.connect()
	if err != nil {
		return err
	}
	d, err := c.Discover(s.ctx)
	if err != nil {
		return withMethod("server/discover", err)
	}
	version := c.ProtocolVersion()
	var info mcp.Implementation
	if v, ok := d.Meta[mcp.MetaServerInfo]; ok {
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &info)
	}
	// A 2025-11-25 session has no server/discover: the library fills in
	// the one version negotiated by initialize. Only a list the server
	// itself sent is reported as its list.
	listed := eraOf(version) == "modern"
	if !listed {
		d.SupportedVersions = nil
	}
	if s.opts.json {
		b, err := json.Marshal(d)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
		if !listed {
			delete(m, "supportedVersions")
		}
		if ni := nonZero(info); ni != nil {
			m["serverInfo"] = ni
		}
		m["protocolVersion"], m["era"] = version, eraOf(version)
		return printJSON(s.out, m)
	}
	if info.Name != "" {
		name := info.Name
		if info.Title != "" {
			name = info.Title + " (" + info.Name + ")"
		}
		fmt.Fprintf(s.out, "server:        %s %s\n", name, info.Version)
	}
	era := "2026-07-28 era: stateless, per-request _meta"
	if eraOf(version) == "legacy" {
		era = version[:min(4, len(version))] + " era: initialize handshake and a session"
	}
	fmt.Fprintf(s.out, "protocol:      %s (%s)\n", version, era)
	if listed {
		fmt.Fprintf(s.out, "supported:     %s\n", strings.Join(d.SupportedVersions, ", "))
	} else {
		fmt.Fprintf(s.out, "supported:     (not listed: a %s server names no versions; it accepted %s in initialize)\n", version, version)
	}
	fmt.Fprintf(s.out, "capabilities:  %s\n", describeCapabilities(d.Capabilities))
	if d.Instructions != "" {
		fmt.Fprintf(s.out, "instructions:  %s\n", indentRest(d.Instructions, "               "))
	}
	return nil
}

func nonZero(i mcp.Implementation) *mcp.Implementation {
	if i.Name == "" {
		return nil
	}
	return &i
}

// eraOf names the era of a protocol version: the 2025 revisions run a
// legacy session.
func eraOf(version string) string {
	if version != "" && version < "2026" {
		return "legacy"
	}
	return "modern"
}

func describeCapabilities(c mcp.ServerCapabilities) string {
	var parts []string
	lc := func(name string, l *mcp.ListChangedCapability) {
		if l == nil {
			return
		}
		if l.ListChanged {
			name += " (listChanged)"
		}
		parts = append(parts, name)
	}
	lc("tools", c.Tools)
	lc("prompts", c.Prompts)
	if c.Resources != nil {
		var flags []string
		if c.Resources.Subscribe {
			flags = append(flags, "subscribe")
		}
		if c.Resources.ListChanged {
			flags = append(flags, "listChanged")
		}
		name := "resources"
		if len(flags) > 0 {
			name += " (" + strings.Join(flags, ", ") + ")"
		}
		parts = append(parts, name)
	}
	if c.Completions != nil {
		parts = append(parts, "completions")
	}
	if c.Logging != nil {
		parts = append(parts, "logging")
	}
	for k := range c.Experimental {
		parts = append(parts, "experimental:"+k)
	}
	for k := range c.Extensions {
		parts = append(parts, "extension:"+k)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// ---- lists ----

// collect gathers every item of a list iterator.
func collect[T any](seq func(yield func(T, error) bool)) ([]T, error) {
	var items []T
	for it, err := range seq {
		if err != nil {
			return items, err
		}
		items = append(items, it)
	}
	return items, nil
}

func cmdTools(s *session) error {
	c, err := s.connect()
	if err != nil {
		return err
	}
	tools, err := collect(c.Tools(s.ctx))
	if err != nil {
		return withMethod("tools/list", err)
	}
	if s.opts.json {
		return printJSON(s.out, map[string]any{"tools": nonNil(tools)})
	}
	if len(tools) == 0 {
		fmt.Fprintln(s.errw, "(no tools)")
	}
	for _, t := range tools {
		printTool(s.out, t)
	}
	return nil
}

func cmdPrompts(s *session) error {
	c, err := s.connect()
	if err != nil {
		return err
	}
	prompts, err := collect(c.Prompts(s.ctx))
	if err != nil {
		return withMethod("prompts/list", err)
	}
	if s.opts.json {
		return printJSON(s.out, map[string]any{"prompts": nonNil(prompts)})
	}
	if len(prompts) == 0 {
		fmt.Fprintln(s.errw, "(no prompts)")
	}
	for _, p := range prompts {
		fmt.Fprintf(s.out, "%s%s\n", p.Name, titled(p.Title))
		if p.Description != "" {
			fmt.Fprintf(s.out, "    %s\n", indentRest(p.Description, "    "))
		}
		for _, a := range p.Arguments {
			req := ""
			if a.Required {
				req = ", required"
			}
			desc := ""
			if a.Description != "" {
				desc = ": " + a.Description
			}
			fmt.Fprintf(s.out, "    %s (string%s)%s\n", a.Name, req, desc)
		}
	}
	return nil
}

func cmdResources(s *session) error {
	c, err := s.connect()
	if err != nil {
		return err
	}
	rs, err := collect(c.Resources(s.ctx))
	if err != nil {
		return withMethod("resources/list", err)
	}
	if s.opts.json {
		return printJSON(s.out, map[string]any{"resources": nonNil(rs)})
	}
	if len(rs) == 0 {
		fmt.Fprintln(s.errw, "(no resources)")
	}
	for _, r := range rs {
		line := r.URI + "  " + r.Name + titled(r.Title)
		if r.MIMEType != "" {
			line += "  " + r.MIMEType
		}
		fmt.Fprintln(s.out, line)
		if r.Description != "" {
			fmt.Fprintf(s.out, "    %s\n", indentRest(r.Description, "    "))
		}
	}
	return nil
}

func cmdTemplates(s *session) error {
	c, err := s.connect()
	if err != nil {
		return err
	}
	ts, err := collect(c.ResourceTemplates(s.ctx))
	if err != nil {
		return withMethod("resources/templates/list", err)
	}
	if s.opts.json {
		return printJSON(s.out, map[string]any{"resourceTemplates": nonNil(ts)})
	}
	if len(ts) == 0 {
		fmt.Fprintln(s.errw, "(no resource templates)")
	}
	for _, t := range ts {
		line := t.URITemplate + "  " + t.Name + titled(t.Title)
		if t.MIMEType != "" {
			line += "  " + t.MIMEType
		}
		fmt.Fprintln(s.out, line)
		if t.Description != "" {
			fmt.Fprintf(s.out, "    %s\n", indentRest(t.Description, "    "))
		}
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func titled(title string) string {
	if title == "" {
		return ""
	}
	return " — " + title
}

// ---- call, get, read ----

func cmdCall(s *session) error {
	s.perRound = true
	c, err := s.connect()
	if err != nil {
		return err
	}
	name := s.args[0]
	var schema *objectSchema
	if !s.opts.noValidate {
		tool, err := findTool(s, c, name)
		if err != nil {
			return err
		}
		if schema, err = parseObjectSchema(tool.InputSchema); err != nil {
			return fmt.Errorf("tool %q: %w", name, err)
		}
	}
	args, err := buildToolArgs(s.args[1:], schema)
	if err != nil {
		return err
	}
	var arg any
	if len(args) > 0 {
		arg = args
	}
	return s.carry(func(ctx context.Context, o *mcp.CallOptions) (any, error) {
		return c.CallTool(ctx, name, arg, o)
	})
}

// findTool reads tools/list for the tool's input schema.
func findTool(s *session, c *mcp.Client, name string) (*mcp.Tool, error) {
	var names []string
	ctx, done := s.roundContext()
	defer done()
	for t, err := range c.Tools(ctx) {
		if err != nil {
			return nil, fmt.Errorf("checking the arguments (--no-validate skips it): %w", withMethod("tools/list", withCause(ctx, err)))
		}
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return nil, withHint(usagef("the server has no tool %q (it has: %s)", name, strings.Join(names, ", ")), didYouMean(name, names))
}

func cmdGet(s *session) error {
	s.perRound = true
	c, err := s.connect()
	if err != nil {
		return err
	}
	args, err := buildPromptArgs(s.args[1:])
	if err != nil {
		return err
	}
	if !s.opts.noValidate {
		p, err := findPrompt(s, c, s.args[0])
		if err != nil {
			return err
		}
		var missing []string
		for _, a := range p.Arguments {
			if _, ok := args[a.Name]; a.Required && !ok {
				missing = append(missing, fmt.Sprintf("%q", a.Name))
			}
		}
		if len(missing) > 0 {
			return usagef("prompt %q needs the argument(s) %s (give NAME=VALUE)", s.args[0], strings.Join(missing, ", "))
		}
	}
	return s.carry(func(ctx context.Context, o *mcp.CallOptions) (any, error) {
		return c.GetPrompt(ctx, s.args[0], args, o)
	})
}

// findPrompt reads prompts/list for the prompt's arguments.
func findPrompt(s *session, c *mcp.Client, name string) (*mcp.Prompt, error) {
	var names []string
	ctx, done := s.roundContext()
	defer done()
	for p, err := range c.Prompts(ctx) {
		if err != nil {
			return nil, fmt.Errorf("checking the arguments (--no-validate skips it): %w", withMethod("prompts/list", withCause(ctx, err)))
		}
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return nil, withHint(usagef("the server has no prompt %q (it has: %s)", name, strings.Join(names, ", ")), didYouMean(name, names))
}

// withMethod names the method in err unless err names it already (the
// library's errors do: "mcp: tools/list: ...").
func withMethod(method string, err error) error {
	if err == nil || strings.Contains(err.Error(), method+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", method, err)
}

func cmdRead(s *session) error {
	s.perRound = true
	c, err := s.connect()
	if err != nil {
		return err
	}
	return s.carry(func(ctx context.Context, o *mcp.CallOptions) (any, error) {
		return c.ReadResource(ctx, s.args[0], o)
	})
}

// carry runs a call that may need input with manual control: each
// input_required round comes back as a *mcp.PendingCallError, whose
// questions are asked in key order and sent back with Resume. (A 2025-11-25
// server asks with live requests instead, answered by the handlers.) With
// --save the first round is written to a file instead.
func (s *session) carry(start func(context.Context, *mcp.CallOptions) (any, error)) error {
	opts := s.callOptions()
	ctx, done := s.roundContext()
	res, err := start(ctx, opts)
	err = withCause(ctx, err)
	done()
	var pending *mcp.PendingCallError
	if s.opts.save != "" && errors.As(err, &pending) {
		return s.savePending(pending.Call)
	}
	if s.opts.save != "" && err == nil {
		fmt.Fprintf(s.errw, "roundtrip: the call completed without asking anything; %s not written\n", s.opts.save)
		if eraOf(s.client.ProtocolVersion()) == "legacy" {
			fmt.Fprintln(s.errw, "roundtrip: (a 2025-11-25 session asks with live requests: --save needs the 2026-07-28 era)")
		}
	}
	return s.finish(res, err)
}

func (s *session) callOptions() *mcp.CallOptions {
	return &mcp.CallOptions{Manual: true, OnProgress: func(p *mcp.ProgressParams) {
		total := ""
		if p.Total != nil {
			total = fmt.Sprintf("/%g", *p.Total)
		}
		msg := ""
		if p.Message != "" {
			msg = " " + p.Message
		}
		fmt.Fprintf(s.errw, "[progress %g%s]%s\n", p.Progress, total, msg)
	}}
}

// finish answers rounds until the call completes, then prints the result.
func (s *session) finish(res any, err error) error {
	rounds := 0
	delay := time.Duration(0)
	for {
		var pending *mcp.PendingCallError
		if !errors.As(err, &pending) {
			break
		}
		rounds++
		if s.opts.maxRounds >= 0 && rounds > s.opts.maxRounds {
			return fmt.Errorf("the server asked for input %d times; giving up (--max-rounds)", rounds-1)
		}
		p := pending.Call
		responses, aerr := s.answerAll(p)
		if errors.Is(aerr, errSamplingDeclined) {
			return errors.New("the sampling request was refused; a 2026-07-28 call cannot go on without its answer")
		}
		if aerr != nil {
			return aerr
		}
		if len(p.InputRequests) == 0 {
			// requestState only: the server is still working. Pace it.
			delay = min(max(2*delay, 50*time.Millisecond), time.Second)
			select {
			case <-time.After(delay):
			case <-s.ctx.Done():
				return s.ctx.Err()
			}
		} else {
			delay = 0
		}
		ctx, done := s.roundContext()
		res, err = s.client.Resume(ctx, p, responses, s.callOptions())
		err = withCause(ctx, err)
		done()
	}
	if isRejectedState(err) {
		if errors.As(err, new(*mcp.StateRejectedError)) { // the library's error says what to do
			return &stateRejectedError{msg: err.Error(), err: err}
		}
		return &stateRejectedError{msg: "the server no longer accepts this call's state (it expired, was already used, or the server's keys changed): start the call again from its first request (" + err.Error() + ")", err: err}
	}
	if err != nil {
		return err
	}
	if s.onComplete != nil {
		s.onComplete(res)
	}
	return s.printResult(res)
}

// answerAll asks the questions of one round, in key order.
func (s *session) answerAll(p *mcp.PendingCall) (mcp.InputResponses, error) {
	keys := make([]string, 0, len(p.InputRequests))
	for k := range p.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	responses := mcp.InputResponses{}
	for _, k := range keys {
		v, err := s.ui.answer(s.ctx, k, p.InputRequests[k])
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("answer to %q: %w", k, err)
		}
		responses[k] = b
	}
	return responses, nil
}

// ---- save and resume ----

// savedCall is the file --save writes.
type savedCall struct {
	Format          string           `json:"format"`
	Target          target           `json:"target"`
	ProtocolVersion string           `json:"protocolVersion,omitempty"`
	SavedAt         time.Time        `json:"savedAt"`
	Call            *mcp.PendingCall `json:"call"`
	// Roots are the call's --root flags: a later round that asks for the
	// roots gets the same ones.
	Roots []mcp.Root `json:"roots,omitempty"`
	// Finished is set when resume completed the call: the file is kept
	// (with the result) but never sent again.
	Finished   bool            `json:"finished,omitempty"`
	FinishedAt *time.Time      `json:"finishedAt,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
}

const savedFormat = "roundtrip-pending-call/v1"

func (s *session) savePending(p *mcp.PendingCall) error {
	b, err := json.MarshalIndent(savedCall{Format: savedFormat, Target: s.target, ProtocolVersion: s.client.ProtocolVersion(),
		SavedAt: time.Now().UTC().Truncate(time.Second), Call: p, Roots: s.ui.roots}, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the pending call: %w", err)
	}
	if err := os.WriteFile(s.opts.save, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("saving the pending call: %w", err)
	}
	target := p.Name
	if p.Method == mcp.MethodResourcesRead {
		target = p.URI
	}
	questions := describeQuestions(p)
	if s.opts.json {
		return printJSON(s.out, map[string]any{"saved": s.opts.save, "method": p.Method, "target": target, "questions": questions})
	}
	fmt.Fprintf(s.errw, "roundtrip: %s %s needs %d answer(s); saved to %s (finish it with: roundtrip resume %s)\n",
		p.Method, target, len(p.InputRequests), s.opts.save, s.opts.save)
	for _, q := range questions {
		line := "  " + q.Kind + ": " + q.Text
		if len(q.Fields) > 0 {
			line += " [" + strings.Join(q.Fields, ", ") + "]"
		}
		fmt.Fprintln(s.errw, line)
	}
	return nil
}

// question is one saved question, as --save shows it.
type question struct {
	Key    string   `json:"key"`
	Kind   string   `json:"kind"` // form, url, sampling, roots
	Text   string   `json:"text"`
	Fields []string `json:"fields,omitempty"`
}

// describeQuestions lists a round's questions in key order (the order
// resume asks them).
func describeQuestions(p *mcp.PendingCall) []question {
	keys := make([]string, 0, len(p.InputRequests))
	for k := range p.InputRequests {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	qs := make([]question, 0, len(keys))
	for _, k := range keys {
		q := question{Key: k}
		switch r := p.InputRequests[k].(type) {
		case *mcp.ElicitRequest:
			q.Kind, q.Text = "form", r.Message
			if r.Mode == mcp.ElicitModeURL {
				q.Kind, q.Text = "url", r.Message+" ("+r.URL+")"
			} else if fields, err := parseForm(r.RequestedSchema); err == nil {
				for _, f := range fields {
					q.Fields = append(q.Fields, f.name)
				}
			}
		case *mcp.CreateMessageRequest:
			q.Kind, q.Text = "sampling", "a model reply"
			if n := len(r.Messages); n > 0 && len(r.Messages[n-1].Content) > 0 {
				q.Text += " to: " + contentText(r.Messages[n-1].Content[0])
			}
		case *mcp.ListRootsRequest:
			q.Kind, q.Text = "roots", "the client's roots (--root)"
		default:
			q.Kind, q.Text = r.InputMethod(), r.InputMethod()
		}
		qs = append(qs, q)
	}
	return qs
}

func cmdResume(s *session) error {
	b, err := os.ReadFile(s.args[0])
	if err != nil {
		return err
	}
	var saved savedCall
	if err := json.Unmarshal(b, &saved); err != nil {
		return fmt.Errorf("%s: %w", s.args[0], err)
	}
	if saved.Format != savedFormat || saved.Call == nil {
		return fmt.Errorf("%s: not a call saved by roundtrip --save", s.args[0])
	}
	if saved.Finished {
		when := ""
		if saved.FinishedAt != nil {
			when = " at " + saved.FinishedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(s.errw, "roundtrip: %s is finished (resumed to completion%s); not sent again. Its result:\n", s.args[0], when)
		return s.printSavedResult(saved)
	}
	if s.opts.url != "" || s.opts.cmdLine != "" || len(s.opts.command) > 0 {
		if s.target, err = s.opts.target(); err != nil {
			return err
		}
	} else if saved.Target.Server != "" && s.namedServerKnown(saved.Target.Server) {
		// A named server: its headers and environment come from the
		// config file again (they are never saved).
		s.opts.server = saved.Target.Server
		if s.target, err = s.opts.target(); err != nil {
			return err
		}
		s.commandFrom = s.opts.commandFrom()
	} else {
		s.target = saved.Target
		if s.target.URL == "" && len(s.target.Command) == 0 {
			return usagef("%s names no server: give --url, --cmd or -- COMMAND", s.args[0])
		}
		if len(s.target.Command) > 0 {
			// Anyone could have written the file: its command runs
			// only when the user agrees.
			s.commandFrom = "the saved call " + s.args[0]
		}
	}
	if len(s.opts.roots) == 0 && len(saved.Roots) > 0 {
		// The call's roots are those it was started with.
		s.ui.roots = saved.Roots
	}
	if s.opts.pinned == "" && !s.opts.legacy && saved.ProtocolVersion != "" {
		// The state was minted in this version: resume in it.
		s.opts.pinned = saved.ProtocolVersion
	}
	if age := time.Since(saved.SavedAt); !saved.SavedAt.IsZero() && age > mcp.DefaultStateTTL {
		// Asking the questions first would waste the user's answers.
		return &stateRejectedError{msg: fmt.Sprintf("%s was saved %s ago, longer than a server keeps a round's state by default (%s): start the call again from its first request",
			s.args[0], age.Round(time.Minute), mcp.DefaultStateTTL)}
	}
	s.perRound = true
	if _, err := s.connect(); err != nil {
		return err
	}
	if err := s.checkPinned(saved.Call); err != nil {
		return err
	}
	s.onComplete = func(res any) {
		// Mark the file finished, so that it is never sent again.
		b, err := json.Marshal(res)
		if err != nil {
			return
		}
		now := time.Now().UTC().Truncate(time.Second)
		saved.Finished, saved.FinishedAt, saved.Result = true, &now, b
		if out, err := json.MarshalIndent(saved, "", "  "); err == nil {
			if err := os.WriteFile(s.args[0], append(out, '\n'), 0o600); err != nil {
				fmt.Fprintf(s.errw, "roundtrip: marking %s finished: %v\n", s.args[0], err)
			}
		}
	}
	return s.finish(nil, &mcp.PendingCallError{Call: saved.Call})
}

// printSavedResult prints the result kept in a finished file.
func (s *session) printSavedResult(saved savedCall) error {
	var res any
	var err error
	switch saved.Call.Method {
	case mcp.MethodToolsCall:
		var r mcp.CallToolResult
		err = json.Unmarshal(saved.Result, &r)
		res = &r
	case mcp.MethodPromptsGet:
		var r mcp.GetPromptResult
		err = json.Unmarshal(saved.Result, &r)
		res = &r
	case mcp.MethodResourcesRead:
		var r mcp.ReadResourceResult
		err = json.Unmarshal(saved.Result, &r)
		res = &r
	default:
		res = saved.Result
	}
	if err != nil || len(saved.Result) == 0 {
		res = saved.Result
		if len(saved.Result) == 0 {
			fmt.Fprintln(s.errw, "(no result kept)")
			return nil
		}
	}
	return s.printResult(res)
}

// ---- listen ----

func cmdListen(s *session) error {
	s.perRound = true // a listen stream stays open: --timeout does not apply
	s.opts.timeout = 0
	c, err := s.connect()
	if err != nil {
		return err
	}
	l := s.opts.listen
	filter := mcp.SubscriptionFilter{ToolsListChanged: l.tools, PromptsListChanged: l.prompts,
		ResourcesListChanged: l.resources, ResourceSubscriptions: l.subscribe}
	if !l.tools && !l.prompts && !l.resources && len(l.subscribe) == 0 {
		filter.ToolsListChanged, filter.PromptsListChanged, filter.ResourcesListChanged = true, true, true
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	n := 0
	err = c.Listen(ctx, filter, func(ln *mcp.ListenNotification) {
		if ln.Method == mcp.NotificationSubscriptionsAck {
			fmt.Fprintln(s.errw, "roundtrip: listening (Ctrl-C to stop)")
			return
		}
		if s.opts.json {
			b, _ := json.Marshal(struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params,omitempty"`
			}{ln.Method, ln.Params})
			s.out.Write(append(jsonText(b), '\n'))
		} else if ln.URI != "" {
			fmt.Fprintf(s.out, "%s %s\n", ln.Method, ln.URI)
		} else {
			fmt.Fprintln(s.out, ln.Method)
		}
		n++
		if l.max > 0 && n >= l.max {
			cancel()
		}
	})
	switch {
	case errors.Is(err, mcp.ErrLegacyUnsupported):
		return fmt.Errorf("listen needs the 2026-07-28 era (subscriptions/listen); this server speaks %s: %w", c.ProtocolVersion(), err)
	case err == nil:
		fmt.Fprintln(s.errw, "roundtrip: the server ended the subscription")
		return nil
	case ctx.Err() != nil && s.ctx.Err() == nil:
		return nil // --max reached
	case s.ctx.Err() != nil:
		return nil // interrupted: the normal way to stop
	}
	return err
}

// namedServerKnown reports whether the config file names the server.
func (s *session) namedServerKnown(name string) bool {
	cfg, err := loadConfig(s.opts.config)
	if err != nil || cfg == nil {
		return false
	}
	_, ok := cfg.lookup(name)
	return ok
}

// ---- servers ----

func cmdServers(s *session) error {
	cfg, err := loadConfig(s.opts.config)
	if err != nil {
		return err
	}
	if cfg == nil {
		return usagef("no config file (looked for %s; give --config FILE or $%s)", strings.Join(configCandidates(), ", "), envConfig)
	}
	type row struct {
		Name    string   `json:"name"`
		URL     string   `json:"url,omitempty"`
		Command []string `json:"command,omitempty"`
		Cwd     string   `json:"cwd,omitempty"`
		SSE     bool     `json:"sse,omitempty"`
		Error   string   `json:"error,omitempty"`
		Source  string   `json:"source"`            // the file that defines it
		Project bool     `json:"project,omitempty"` // a project file: its command runs only when allowed
	}
	var rows []row
	for _, name := range cfg.names() {
		o := cfg.origin[name]
		r, err := cfg.resolve(name)
		if err != nil {
			rows = append(rows, row{Name: name, Error: err.Error(), Source: o.path, Project: o.project})
			continue
		}
		rows = append(rows, row{Name: name, URL: r.target.URL, Command: r.target.Command, Cwd: r.target.Dir, SSE: r.sse, Source: o.path, Project: o.project})
	}
	if s.opts.json {
		return printJSON(s.out, map[string]any{"config": cfg.path, "servers": rows})
	}
	fmt.Fprintf(s.errw, "(from %s)\n", cfg.path)
	for _, r := range rows {
		from := "  [" + r.Source + "]"
		if r.Project {
			from = "  [" + r.Source + ", a project file: asks before running a command]"
		}
		switch {
		case r.Error != "":
			fmt.Fprintf(s.out, "%s  (unusable: %s)%s\n", r.Name, r.Error, from)
		case r.URL != "":
			kind := "http"
			if r.SSE {
				kind = "sse"
			}
			fmt.Fprintf(s.out, "%s  %s %s%s\n", r.Name, kind, r.URL, from)
		default:
			line := fmt.Sprintf("%s  stdio %s", r.Name, strings.Join(r.Command, " "))
			if r.Cwd != "" {
				line += "  (in " + r.Cwd + ")"
			}
			fmt.Fprintln(s.out, line+from)
		}
	}
	return nil
}
