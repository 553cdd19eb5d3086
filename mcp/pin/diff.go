package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ErrChanged is matched (errors.Is) by every *ChangeError.
var ErrChanged = errors.New("pin: tool definition not approved")

// ChangeError refuses a tools/call whose tool is not pinned as the
// server now lists it: its definition changed since it was pinned, or it
// was never pinned (Old is nil). Its text and Diff hold the server's
// strings: sanitize them before writing them to a terminal.
type ChangeError struct {
	// Tool is the tool's name.
	Tool string
	// Old is the pinned definition (nil when the tool was not pinned),
	// New the one the server lists.
	Old, New *mcp.Tool
	// Fields names the members that differ, in this order: title,
	// description, inputSchema, outputSchema, annotations (every member
	// the new definition has, for a tool not pinned).
	Fields []string
}

func (e *ChangeError) Error() string {
	if e.Old == nil {
		return fmt.Sprintf("pin: tool %q is not pinned (not approved yet)", e.Tool)
	}
	return fmt.Sprintf("pin: tool %q changed since it was pinned (%s):\n%s", e.Tool, strings.Join(e.Fields, ", "), e.Diff())
}

// Is makes a *ChangeError match ErrChanged.
func (e *ChangeError) Is(target error) bool { return target == ErrChanged }

// Compare returns the change from old (the pinned definition, nil when
// none is) to new as a *ChangeError, for an OnChange that shows it; nil
// when new is what old pins.
func Compare(old, new *mcp.Tool) *ChangeError {
	if old != nil && same(old, new) {
		return nil
	}
	name := ""
	if new != nil {
		name = new.Name
	}
	return &ChangeError{Tool: name, Old: old, New: new, Fields: changedFields(old, new)}
}

// Bounds of a diff: the context kept around a change, what one side of a
// field shows at most, and the whole diff.
const (
	diffContext  = 60
	maxDiffSide  = 400
	maxDiffTotal = 4096
)

// Diff shows each changed field as its old and new text ("-" and "+"
// lines; a schema or annotations as canonical JSON), cut to the part that
// differs with some context around it, each side at most a few hundred
// bytes and the whole at most 4 KiB. For a tool not pinned it shows the
// new definition's fields.
func (e *ChangeError) Diff() string {
	var old, cur map[string]string
	if e.Old != nil {
		old = fieldTexts(e.Old)
	}
	if e.New != nil {
		cur = fieldTexts(e.New)
	}
	var b strings.Builder
	for _, f := range e.Fields {
		o, n := old[f], cur[f]
		if e.Old != nil {
			o, n = trimCommon(o, n)
		}
		fmt.Fprintf(&b, "%s:\n", f)
		if e.Old != nil {
			writeSide(&b, "-", o, old[f] == "")
		}
		writeSide(&b, "+", n, cur[f] == "")
		if b.Len() > maxDiffTotal {
			s := b.String()
			cut := maxDiffTotal
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			return s[:cut] + "\n  … (diff cut)\n"
		}
	}
	return b.String()
}

func writeSide(b *strings.Builder, mark, s string, absent bool) {
	if absent {
		fmt.Fprintf(b, "  %s (none)\n", mark)
		return
	}
	if len(s) > maxDiffSide {
		cut := maxDiffSide
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
	}
	fmt.Fprintf(b, "  %s %s\n", mark, strings.ReplaceAll(s, "\n", "\n    "))
}

// trimCommon cuts the common prefix and suffix of a and b, keeping
// diffContext bytes of each around the change ("…" marks a cut), on
// rune boundaries.
func trimCommon(a, b string) (string, string) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	start := max(p-diffContext, 0)
	for start > 0 && (!utf8.RuneStart(a[start])) {
		start--
	}
	endKeep := max(s-diffContext, 0) // bytes cut from the end
	for endKeep > 0 && !utf8.RuneStart(a[len(a)-endKeep]) {
		endKeep--
	}
	cut := func(x string) string {
		out := x[start : len(x)-endKeep]
		if start > 0 {
			out = "…" + out
		}
		if endKeep > 0 {
			out += "…"
		}
		return out
	}
	return cut(a), cut(b)
}

// fieldTexts returns each pinned member of t as the text a diff shows:
// strings as they are, the others as canonical JSON; absent members are
// left out.
func fieldTexts(t *mcp.Tool) map[string]string {
	def, err := definition(t)
	if err != nil {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(def, &m) != nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
			out[k] = s
			continue
		}
		out[k] = string(v)
	}
	return out
}

// changedFields returns the pinned members whose canonical text differs
// between old and cur (every member cur has when old is nil).
func changedFields(old, cur *mcp.Tool) []string {
	var o map[string]string
	if old != nil {
		o = fieldTexts(old)
	}
	n := fieldTexts(cur)
	var out []string
	for _, f := range fields {
		a, inA := o[f]
		b, inB := n[f]
		if old == nil {
			if inB {
				out = append(out, f)
			}
			continue
		}
		if a != b || inA != inB {
			out = append(out, f)
		}
	}
	return out
}
