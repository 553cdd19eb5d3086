package skills

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds of the front matter parser. A SKILL.md is untrusted text (a
// server reads it from a directory, a client from a server): anything past
// them is an error, never a long parse.
const (
	// MaxFrontmatterSize is the largest front matter block (the bytes
	// between the two "---" lines) that ParseFrontmatter reads.
	MaxFrontmatterSize = 64 << 10
	// maxFrontmatterKeys bounds the keys of all mappings together, and
	// the items of all sequences.
	maxFrontmatterKeys = 512
	// maxFrontmatterDepth bounds the nesting of mappings and sequences.
	maxFrontmatterDepth = 4
)

// ErrFrontmatter is wrapped by every error of ParseFrontmatter.
var ErrFrontmatter = errors.New("skills: invalid SKILL.md front matter")

// ParseFrontmatter splits a SKILL.md into its front matter, as the JSON
// object a skill entry carries (values are string, bool, nil, float64,
// []any and map[string]any), and the markdown body after it.
//
// It reads the small subset of YAML that skill front matter uses: a
// block mapping of keys to plain, single- or double-quoted scalars, nested
// block mappings and block sequences of scalars (at most 4 levels), with
// comments and blank lines. Plain scalars are typed as YAML 1.2's core
// schema types them (null, true/false, integers and floats; everything
// else is a string). Flow collections, block scalars (| and >), anchors,
// aliases, tags, multi-line plain scalars and duplicate keys are refused.
// The text may start with a byte order mark and use CRLF line ends; it
// must begin with a "---" line, and the front matter ends at the next
// "---" line. At most MaxFrontmatterSize bytes and 512 keys are read.
func ParseFrontmatter(markdown []byte) (map[string]any, []byte, error) {
	text := bytes.TrimPrefix(markdown, []byte("\xef\xbb\xbf"))
	yaml, body, err := splitFrontmatter(text)
	if err != nil {
		return nil, nil, err
	}
	if !utf8.Valid(yaml) {
		return nil, nil, fmt.Errorf("%w: not valid UTF-8", ErrFrontmatter)
	}
	p := &fmParser{}
	for i, line := range strings.Split(strings.ReplaceAll(string(yaml), "\r\n", "\n"), "\n") {
		p.lines = append(p.lines, fmLine{no: i + 2, text: line})
	}
	p.skipBlank()
	if p.pos == len(p.lines) {
		return nil, nil, fmt.Errorf("%w: empty front matter", ErrFrontmatter)
	}
	if p.lines[p.pos].indent() != 0 {
		return nil, nil, p.errorf(p.lines[p.pos], "unexpected indentation")
	}
	m, err := p.mapping(0, 1)
	if err != nil {
		return nil, nil, err
	}
	p.skipBlank()
	if p.pos < len(p.lines) {
		return nil, nil, p.errorf(p.lines[p.pos], "unexpected content")
	}
	return m, body, nil
}

// splitFrontmatter returns the bytes between the opening and the closing
// "---" lines and the body after the closing one.
func splitFrontmatter(text []byte) (yaml, body []byte, err error) {
	first, rest, ok := bytes.Cut(text, []byte("\n"))
	if !ok || string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, nil, fmt.Errorf("%w: SKILL.md must begin with a \"---\" line", ErrFrontmatter)
	}
	off := 0
	for off <= len(rest) && off <= MaxFrontmatterSize+2 {
		line := rest[off:]
		end := bytes.IndexByte(line, '\n')
		next := len(rest)
		if end >= 0 {
			line, next = line[:end], off+end+1
		}
		if string(bytes.TrimRight(line, " \t\r")) == "---" {
			if off > MaxFrontmatterSize {
				break
			}
			return rest[:off], rest[next:], nil
		}
		if end < 0 {
			return nil, nil, fmt.Errorf("%w: no closing \"---\" line", ErrFrontmatter)
		}
		off = next
	}
	return nil, nil, fmt.Errorf("%w: longer than %d bytes", ErrFrontmatter, MaxFrontmatterSize)
}

type fmLine struct {
	no   int
	text string
}

// indent is the number of leading spaces (-1 for a line whose
// indentation holds a tab).
func (l fmLine) indent() int {
	n := 0
	for n < len(l.text) && l.text[n] == ' ' {
		n++
	}
	if n < len(l.text) && l.text[n] == '\t' {
		return -1
	}
	return n
}

// blank reports a line that is empty, white or a comment.
func (l fmLine) blank() bool {
	t := strings.TrimLeft(l.text, " \t")
	return t == "" || t[0] == '#'
}

type fmParser struct {
	lines []fmLine
	pos   int
	items int
}

func (p *fmParser) errorf(l fmLine, format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrFrontmatter, l.no, fmt.Sprintf(format, args...))
}

func (p *fmParser) skipBlank() {
	for p.pos < len(p.lines) && p.lines[p.pos].blank() {
		p.pos++
	}
}

func (p *fmParser) count(l fmLine) error {
	p.items++
	if p.items > maxFrontmatterKeys {
		return p.errorf(l, "more than %d keys and items", maxFrontmatterKeys)
	}
	return nil
}

// mapping reads the keys at exactly indent, until a line indented less.
func (p *fmParser) mapping(indent, depth int) (map[string]any, error) {
	m := map[string]any{}
	for {
		p.skipBlank()
		if p.pos == len(p.lines) {
			return m, nil
		}
		l := p.lines[p.pos]
		in := l.indent()
		if in < 0 {
			return nil, p.errorf(l, "tabs are not allowed in indentation")
		}
		if in < indent {
			return m, nil
		}
		if in > indent {
			return nil, p.errorf(l, "unexpected indentation")
		}
		if err := p.count(l); err != nil {
			return nil, err
		}
		key, rest, err := p.key(l, l.text[in:])
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, p.errorf(l, "duplicate key %q", key)
		}
		p.pos++
		if strings.TrimSpace(stripComment(rest)) != "" {
			v, err := p.scalar(l, rest)
			if err != nil {
				return nil, err
			}
			m[key] = v
			continue
		}
		v, err := p.nested(indent, depth)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
}

// nested reads the block value of a key whose line ended after the
// colon: a mapping or a sequence indented more, a sequence at the same
// indentation, or null when neither follows.
func (p *fmParser) nested(indent, depth int) (any, error) {
	p.skipBlank()
	if p.pos == len(p.lines) {
		return nil, nil
	}
	l := p.lines[p.pos]
	in := l.indent()
	if in < 0 {
		return nil, p.errorf(l, "tabs are not allowed in indentation")
	}
	item := isItem(l.text[max(in, 0):])
	if in < indent || (in == indent && !item) {
		return nil, nil
	}
	if depth+1 > maxFrontmatterDepth {
		return nil, p.errorf(l, "nesting deeper than %d levels", maxFrontmatterDepth)
	}
	if item {
		return p.sequence(in)
	}
	return p.mapping(in, depth+1)
}

// sequence reads "- scalar" items at exactly indent.
func (p *fmParser) sequence(indent int) ([]any, error) {
	s := []any{}
	for {
		p.skipBlank()
		if p.pos == len(p.lines) {
			return s, nil
		}
		l := p.lines[p.pos]
		in := l.indent()
		if in < 0 {
			return nil, p.errorf(l, "tabs are not allowed in indentation")
		}
		if in < indent || (in == indent && !isItem(l.text[in:])) {
			return s, nil
		}
		if in > indent {
			return nil, p.errorf(l, "unexpected indentation")
		}
		if err := p.count(l); err != nil {
			return nil, err
		}
		rest := strings.TrimPrefix(l.text[in:], "-")
		if strings.TrimSpace(stripComment(rest)) == "" {
			return nil, p.errorf(l, "a sequence item must be a scalar on its line")
		}
		if t := strings.TrimLeft(rest, " "); isItem(t) || plainKey(t) {
			return nil, p.errorf(l, "a sequence item must be a scalar (nested collections are not supported)")
		}
		v, err := p.scalar(l, rest)
		if err != nil {
			return nil, err
		}
		s = append(s, v)
		p.pos++
	}
}

func isItem(t string) bool { return t == "-" || strings.HasPrefix(t, "- ") }

// plainKey reports text that reads as "key: value" with a plain key.
func plainKey(t string) bool {
	i := strings.Index(t, ":")
	return i > 0 && (i == len(t)-1 || t[i+1] == ' ') && !strings.ContainsAny(t[:i], "\"'#")
}

// key reads "key:" at the start of t and returns the key and what
// follows the colon.
func (p *fmParser) key(l fmLine, t string) (string, string, error) {
	if t == "" {
		return "", "", p.errorf(l, "expected \"key: value\"")
	}
	switch t[0] {
	case '"', '\'':
		k, n, err := p.quoted(l, t)
		if err != nil {
			return "", "", err
		}
		rest := t[n:]
		if !strings.HasPrefix(rest, ":") || (len(rest) > 1 && rest[1] != ' ') {
			return "", "", p.errorf(l, "expected \": \" after a quoted key")
		}
		return k, rest[1:], nil
	case '-', '?', '[', '{', '&', '*', '!', '|', '>', '%', '@', '`', '#':
		return "", "", p.errorf(l, "expected \"key: value\" (a block mapping)")
	}
	i := strings.Index(t, ":")
	for i >= 0 && i+1 < len(t) && t[i+1] != ' ' {
		j := strings.Index(t[i+1:], ":")
		if j < 0 {
			i = -1
			break
		}
		i += 1 + j
	}
	if i <= 0 {
		return "", "", p.errorf(l, "expected \"key: value\"")
	}
	k := strings.TrimRight(t[:i], " ")
	if strings.ContainsAny(k, "#\"'") {
		return "", "", p.errorf(l, "invalid key %q", k)
	}
	return k, t[i+1:], nil
}

// scalar reads the value after a key's colon or an item's dash.
func (p *fmParser) scalar(l fmLine, rest string) (any, error) {
	t := strings.TrimLeft(rest, " ")
	if t == "" {
		return nil, nil
	}
	if t[0] == '"' || t[0] == '\'' {
		s, n, err := p.quoted(l, t)
		if err != nil {
			return nil, err
		}
		if after := strings.TrimLeft(t[n:], " "); after != "" && after[0] != '#' {
			return nil, p.errorf(l, "unexpected text after a quoted value")
		}
		return s, nil
	}
	switch t[0] {
	case '[', '{':
		return nil, p.errorf(l, "flow collections are not supported")
	case '|', '>':
		return nil, p.errorf(l, "block scalars are not supported")
	case '&', '*', '!':
		return nil, p.errorf(l, "anchors, aliases and tags are not supported")
	case '%', '@', '`', ',', ']', '}':
		return nil, p.errorf(l, "%q cannot start a plain value; quote it", t[0])
	}
	v := strings.TrimRight(stripComment(t), " \t")
	if strings.Contains(v, ": ") || strings.HasSuffix(v, ":") {
		return nil, p.errorf(l, "a plain value cannot contain \": \"; quote it")
	}
	// A continuation line (a multi-line plain scalar) is indented more
	// than its key or item: the caller refuses it as unexpected
	// indentation.
	return typed(l, p, v)
}

// typed applies YAML 1.2's core schema to a plain scalar.
func typed(l fmLine, p *fmParser, v string) (any, error) {
	switch v {
	case "", "~", "null", "Null", "NULL":
		return nil, nil
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN":
		return nil, p.errorf(l, "%q cannot be represented in JSON; quote it", v)
	}
	if isCoreInt(v) || isCoreFloat(v) {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || (isCoreInt(v) && math.Abs(f) > 1<<53) {
			return nil, p.errorf(l, "%q cannot be represented in JSON exactly; quote it", v)
		}
		return f, nil
	}
	if strings.HasPrefix(v, "0x") || strings.HasPrefix(v, "0o") {
		return nil, p.errorf(l, "%q: hexadecimal and octal numbers are not supported; quote it", v)
	}
	return v, nil
}

func isCoreInt(v string) bool {
	s := strings.TrimLeft(v, "+-")
	if len(v)-len(s) > 1 || s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isCoreFloat matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func isCoreFloat(v string) bool {
	s := v
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digits := func() int {
		n := 0
		for n < len(s) && s[n] >= '0' && s[n] <= '9' {
			n++
		}
		s = s[n:]
		return n
	}
	whole := digits()
	frac := 0
	if s != "" && s[0] == '.' {
		s = s[1:]
		frac = digits()
		if whole == 0 && frac == 0 {
			return false
		}
	} else if whole == 0 {
		return false
	}
	if s != "" && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s != "" && (s[0] == '+' || s[0] == '-') {
			s = s[1:]
		}
		if digits() == 0 {
			return false
		}
	}
	return s == ""
}

// stripComment removes a " #" comment from a plain value.
func stripComment(t string) string {
	if strings.HasPrefix(t, "#") {
		return ""
	}
	if i := strings.Index(t, " #"); i >= 0 {
		return t[:i]
	}
	if i := strings.Index(t, "\t#"); i >= 0 {
		return t[:i]
	}
	return t
}

// quoted reads a single- or double-quoted scalar at the start of t (on
// one line) and returns it and the bytes it took.
func (p *fmParser) quoted(l fmLine, t string) (string, int, error) {
	q := t[0]
	var b strings.Builder
	for i := 1; i < len(t); i++ {
		c := t[i]
		switch {
		case c == q && q == '\'':
			if i+1 < len(t) && t[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), i + 1, nil
		case c == q:
			return b.String(), i + 1, nil
		case c == '\\' && q == '"':
			if i+1 >= len(t) {
				return "", 0, p.errorf(l, "unclosed quoted value")
			}
			i++
			switch e := t[i]; e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case ' ':
				b.WriteByte(' ')
			case 'u', 'U', 'x':
				width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if i+width >= len(t) {
					return "", 0, p.errorf(l, "invalid escape")
				}
				n, err := strconv.ParseUint(t[i+1:i+1+width], 16, 32)
				if err != nil || n > utf8.MaxRune || (n >= 0xD800 && n <= 0xDFFF) {
					return "", 0, p.errorf(l, "invalid escape")
				}
				b.WriteRune(rune(n))
				i += width
			default:
				return "", 0, p.errorf(l, "unknown escape \"\\%c\"", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, p.errorf(l, "unclosed quoted value (multi-line quoted values are not supported)")
}
