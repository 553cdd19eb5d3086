package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/charmbracelet/huh"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/pin"
)

// Tool pinning (mcp/pin): the CLI pins the definition of each tool it
// calls (trust on first use) and, when a server later lists the tool with
// another description, schema or annotations, shows the change and asks
// [y/N] before calling it (in a terminal; elsewhere it refuses, exit 8).
// On by default for a server named in a config file; --pin FILE turns it
// on for any server (and names the file), --no-pin turns it off. The pins
// are kept in roundtrip/pins.json in the user configuration directory,
// next to the OAuth tokens, one entry per server: "server:NAME",
// "url:URL" or "command:COMMAND".

const pinsFormat = "roundtrip-pins/v1"

type pinFlags struct {
	file string // --pin FILE
	off  bool   // --no-pin
}

func (p *pinFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.file, "pin", p.file, "pin the definitions of the tools called in `FILE` and ask before calling one that changed (on by default for a server of the config file, in roundtrip/pins.json in the user config directory)")
	fs.BoolVar(&p.off, "no-pin", p.off, "do not pin tool definitions nor check them")
}

// pinsFile is what the pins file holds: the Pins of each server.
type pinsFile struct {
	Format  string                     `json:"format"`
	Servers map[string]json.RawMessage `json:"servers"`
}

// pinning is a session's pinning state.
type pinning struct {
	path, key string
	pins      *pin.Pins
	mu        sync.Mutex // one save at a time
}

// pinKey names s.target in the pins file.
func (s *session) pinKey() string {
	switch {
	case s.target.Server != "":
		return "server:" + s.target.Server
	case s.target.URL != "":
		return "url:" + s.target.URL
	}
	return "command:" + quoteCommand(s.target.Command)
}

// enablePinning adds the pinning Guard to copts when pinning is on for
// s.target; bind is to be called with the Client made from copts.
func (s *session) enablePinning(copts *mcp.ClientOptions) (bind func(*mcp.Client), err error) {
	f := s.opts.pin
	if f.off || (f.file == "" && s.target.Server == "") {
		return func(*mcp.Client) {}, nil
	}
	path := f.file
	if path == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("no place for the tool pins (give --pin FILE, or --no-pin): %w", err)
		}
		path = filepath.Join(dir, "roundtrip", "pins.json")
	}
	p := &pinning{path: path, key: s.pinKey(), pins: new(pin.Pins)}
	file, err := readPins(path)
	if err != nil {
		return nil, err
	}
	if raw, ok := file.Servers[p.key]; ok {
		if err := json.Unmarshal(raw, p.pins); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, p.key, err)
		}
	}
	g := pin.Enable(copts, &pin.Options{Pins: p.pins, OnChange: func(ctx context.Context, tool string, old, new *mcp.Tool) bool {
		return s.approveTool(ctx, p, tool, old, new)
	}})
	s.guard = g
	return g.Bind, nil
}

// checkPinned checks the tool of a saved call before its questions are
// asked again (answers to a call that will be refused would be wasted).
func (s *session) checkPinned(call *mcp.PendingCall) error {
	if s.guard == nil || call.Method != mcp.MethodToolsCall {
		return nil
	}
	ctx, done := s.roundContext()
	defer done()
	return withCause(ctx, s.guard.Check(ctx, call.Name))
}

func readPins(path string) (*pinsFile, error) {
	f := &pinsFile{Format: pinsFormat, Servers: map[string]json.RawMessage{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Format != pinsFormat {
		return nil, fmt.Errorf("%s: not a pins file of roundtrip (format %q)", path, f.Format)
	}
	if f.Servers == nil {
		f.Servers = map[string]json.RawMessage{}
	}
	return f, nil
}

// save writes the session's pins into the file (read again first, so
// that the other servers' entries written meanwhile are kept), 0600,
// through a temporary file renamed over it.
func (p *pinning) save() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := readPins(p.path)
	if err != nil {
		return err
	}
	mine, err := json.Marshal(p.pins)
	if err != nil {
		return err
	}
	f.Servers[p.key] = mine
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p.path), ".pins-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p.path)
}

// approveTool is the Guard's OnChange: a tool seen for the first time is
// pinned; a changed one is shown and, in a terminal, the user is asked.
func (s *session) approveTool(ctx context.Context, p *pinning, tool string, old, new *mcp.Tool) bool {
	accept := func() bool {
		if err := p.pins.Set(new); err != nil {
			fmt.Fprintf(s.errw, "roundtrip: cannot pin tool %s: %v\n", sanitizeLine(tool), err)
			return false
		}
		if err := p.save(); err != nil {
			fmt.Fprintf(s.errw, "roundtrip: cannot save the pins: %v\n", err)
			return false
		}
		return true
	}
	if old == nil {
		if !accept() {
			return false
		}
		fmt.Fprintf(s.errw, "roundtrip: pinned tool %q (first use; a later change will be shown and asked about)\n", tool)
		return true
	}
	ce := pin.Compare(old, new)
	if ce == nil {
		return true
	}
	// s.errw sanitizes what the server wrote.
	fmt.Fprintf(s.errw, "roundtrip: tool %q changed since you approved it (%s):\n%s", tool, strings.Join(ce.Fields, ", "), indentLines(ce.Diff(), "  "))
	if !s.tty {
		return false
	}
	defer s.ui.hold()()
	if s.ui.tui {
		yes := false
		fld := huh.NewConfirm().Title("Call the changed tool?").Description(sanitize(fmt.Sprintf("%q changed: %s", tool, strings.Join(ce.Fields, ", ")))).Value(&yes)
		if err := s.ui.runField(ctx, fld); err != nil {
			return false
		}
		// huh clears the field when done: keep the transcript.
		answer := "no"
		if yes {
			answer = "yes"
		}
		fmt.Fprintf(s.errw, "roundtrip: accept the new definition and call it? %s\n", answer)
		return yes && accept()
	}
	line, err := s.ui.ask(ctx, "roundtrip: accept the new definition and call it? [y/N]: ")
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return accept()
	}
	return false
}

func indentLines(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// pinRefusal is the message of a call refused because its tool changed.
func pinRefusal(ce *pin.ChangeError) (msg, hint string) {
	if ce.Old == nil {
		return fmt.Sprintf("tool %q is not pinned: not called", ce.Tool), ""
	}
	return fmt.Sprintf("tool %q changed since it was pinned (%s): not called", ce.Tool, strings.Join(ce.Fields, ", ")),
		"review the change and accept it when asked (in a terminal), or give --no-pin to call without checking"
}
