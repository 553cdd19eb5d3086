package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// ClientOptions bound what a Client accepts from a server.
type ClientOptions struct {
	// MaxPages is the most pages List walks. Zero means 100.
	MaxPages int
	// MaxSkills is the most entries List keeps. Zero means 10000.
	MaxSkills int
}

// Client is the host side of the extension on an mcp.Client. The
// mcp.Client should declare the extension (Declare).
type Client struct {
	c    *mcp.Client
	opts ClientOptions
}

// NewClient returns a Client reading skills through c.
func NewClient(c *mcp.Client, opts *ClientOptions) *Client {
	cl := &Client{c: c}
	if opts != nil {
		cl.opts = *opts
	}
	if cl.opts.MaxPages <= 0 {
		cl.opts.MaxPages = 100
	}
	if cl.opts.MaxSkills <= 0 {
		cl.opts.MaxSkills = 10000
	}
	return cl
}

// Errors of a Client.
var (
	// ErrNotSupported: the server does not declare the extension.
	ErrNotSupported = errors.New("skills: the server does not declare the skills extension")
	// ErrInvalidEntry: an entry from the server breaks the extension's
	// rules (the error names the entry and the rule).
	ErrInvalidEntry = errors.New("skills: invalid skill entry")
)

// VerificationError is a file that failed verification against its skill
// entry. The file's content is not returned; for SKILL.md, the skill must
// not be loaded.
type VerificationError struct {
	URI    string
	Reason Reason
	Detail string
}

// Reason says why a file failed verification.
type Reason string

// The reasons of a VerificationError.
const (
	// ReasonUnlisted: the file is not in the skill's manifest (or the
	// skill is dynamic); nothing was requested.
	ReasonUnlisted Reason = "unlisted"
	// ReasonSize: the bytes read are not the size the entry lists.
	ReasonSize Reason = "size"
	// ReasonDigest: their SHA-256 is not the digest the entry lists.
	ReasonDigest Reason = "digest"
	// ReasonFrontmatter: the SKILL.md front matter does not parse or
	// differs from the entry's.
	ReasonFrontmatter Reason = "frontmatter"
)

func (e *VerificationError) Error() string {
	return fmt.Sprintf("skills: %s failed verification (%s): %s", e.URI, e.Reason, e.Detail)
}

// Supported reports whether the server declares the extension, and its
// settings.
func (c *Client) Supported(ctx context.Context) (Settings, bool, error) {
	d, err := c.c.Discover(ctx)
	if err != nil {
		return Settings{}, false, err
	}
	raw, ok := d.Capabilities.Extensions[Extension]
	if !ok {
		return Settings{}, false, nil
	}
	var s Settings
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s); err != nil {
			return Settings{}, true, fmt.Errorf("skills: the extension's settings: %w", err)
		}
	}
	return s, true, nil
}

type listResult struct {
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor"`
}

// List walks every page of skills/list and returns the entries, each
// checked (CheckEntry). An invalid entry, a URI listed twice, more than
// MaxPages pages or MaxSkills entries, or a repeated cursor is an error:
// a listing is used whole or not at all.
func (c *Client) List(ctx context.Context) ([]*Skill, error) {
	if _, ok, err := c.Supported(ctx); err != nil {
		return nil, err
	} else if !ok {
		return nil, ErrNotSupported
	}
	var out []*Skill
	seen := map[string]bool{}
	cursors := map[string]bool{}
	var cursor string
	for page := 0; ; page++ {
		if page >= c.opts.MaxPages {
			return nil, fmt.Errorf("skills: skills/list has more than %d pages", c.opts.MaxPages)
		}
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		res, err := mcp.CallMethodAs[listResult](ctx, c.c, &mcp.MethodCall{Method: MethodList, Params: params}, nil)
		if err != nil {
			return nil, err
		}
		for i, raw := range res.Skills {
			s, err := decodeEntry(raw)
			if err != nil {
				return nil, fmt.Errorf("%w: skills[%d]: %v", ErrInvalidEntry, len(out)+i, err)
			}
			if seen[s.URI] {
				return nil, fmt.Errorf("%w: %s is listed twice", ErrInvalidEntry, s.URI)
			}
			seen[s.URI] = true
			out = append(out, s)
			if len(out) > c.opts.MaxSkills {
				return nil, fmt.Errorf("skills: skills/list has more than %d entries", c.opts.MaxSkills)
			}
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if cursors[res.NextCursor] {
			return nil, fmt.Errorf("skills: skills/list repeated the cursor %q", res.NextCursor)
		}
		cursors[res.NextCursor] = true
		cursor = res.NextCursor
	}
}

// Get returns the entry of the skill whose SKILL.md is uri, checked.
func (c *Client) Get(ctx context.Context, uri string) (*Skill, error) {
	res, err := mcp.CallMethodAs[struct {
		Skill json.RawMessage `json:"skill"`
	}](ctx, c.c, &mcp.MethodCall{Method: MethodGet, Params: map[string]string{"uri": uri}}, nil)
	if err != nil {
		return nil, err
	}
	s, err := decodeEntry(res.Skill)
	if err != nil {
		return nil, fmt.Errorf("%w: skills/get %s: %v", ErrInvalidEntry, uri, err)
	}
	if s.URI != uri {
		return nil, fmt.Errorf("%w: skills/get %s answered %s", ErrInvalidEntry, uri, s.URI)
	}
	return s, nil
}

func decodeEntry(raw json.RawMessage) (*Skill, error) {
	var s Skill
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if err := CheckEntry(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

// CheckEntry checks an entry against the extension's rules: a
// skill://…/SKILL.md URI whose last skill-path segment is the front matter
// name; name and description within the Agent Skills rules; a manifest
// (unless dynamic) of at most MaxFiles files holding at most MaxSkillSize
// bytes, each listed once, within the skill's directory, with a digest of
// the right form and a size, SKILL.md among them.
func CheckEntry(s *Skill) error {
	root, ok := strings.CutSuffix(s.URI, "/"+ManifestName)
	if !ok || !strings.Contains(root, "://") || strings.ContainsAny(s.URI, "?#") {
		return fmt.Errorf("uri %q is not a URI ending in /%s", s.URI, ManifestName)
	}
	segs := strings.Split(root[strings.Index(root, "://")+3:], "/")
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("uri %q has an empty or dot segment", s.URI)
		}
	}
	if s.Frontmatter == nil {
		return fmt.Errorf("%s: no frontmatter", s.URI)
	}
	if err := checkFrontmatter(s.Frontmatter); err != nil {
		return fmt.Errorf("%s: %w", s.URI, err)
	}
	if name := s.Name(); segs[len(segs)-1] != name {
		return fmt.Errorf("%s: the last segment of the skill path is not the front matter name %q", s.URI, name)
	}
	if s.Dynamic {
		return nil
	}
	if len(s.Resources) > MaxFiles {
		return fmt.Errorf("%s: %d files, more than %d", s.URI, len(s.Resources), MaxFiles)
	}
	seen := map[string]bool{}
	var total int64
	for _, f := range s.Resources {
		if seen[f.URI] {
			return fmt.Errorf("%s: %s is listed twice", s.URI, f.URI)
		}
		seen[f.URI] = true
		if f.URI != s.URI && !within(root, f.URI) {
			return fmt.Errorf("%s: %s is outside the skill's directory", s.URI, f.URI)
		}
		if !digestRE.MatchString(f.Digest) {
			return fmt.Errorf("%s: %s: digest %q is not sha256:<64 lowercase hex>", s.URI, f.URI, f.Digest)
		}
		if f.Size < 0 || f.Size > MaxSkillSize {
			return fmt.Errorf("%s: %s: size %d out of range", s.URI, f.URI, f.Size)
		}
		total += f.Size
	}
	if total > MaxSkillSize {
		return fmt.Errorf("%s: its files hold %d bytes, more than %d", s.URI, total, MaxSkillSize)
	}
	if !seen[s.URI] {
		return fmt.Errorf("%s: resources does not list the skill's own %s", s.URI, ManifestName)
	}
	return nil
}

// within reports whether uri names a file below root: no empty, dot or
// dot-dot segment, no query or fragment.
func within(root, uri string) bool {
	rest, ok := strings.CutPrefix(uri, root+"/")
	if !ok || rest == "" || strings.ContainsAny(rest, "?#\\") {
		return false
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
			return false
		}
	}
	return true
}

// Loaded is a skill whose SKILL.md was fetched and verified.
type Loaded struct {
	Skill *Skill
	// Frontmatter is the parsed front matter, equal to the entry's.
	Frontmatter map[string]any
	// Body is the markdown after the front matter.
	Body []byte
}

// Load fetches the skill's SKILL.md and verifies it (Read), parses its
// front matter and compares it, field by field, with the entry's: any
// difference is a *VerificationError and the skill must not be loaded.
// Nothing else of the skill is fetched: its other files are read on
// demand with Read.
func (c *Client) Load(ctx context.Context, s *Skill) (*Loaded, error) {
	data, err := c.Read(ctx, s, ManifestName)
	if err != nil {
		return nil, err
	}
	fm, body, err := ParseFrontmatter(data)
	if err != nil {
		return nil, &VerificationError{URI: s.URI, Reason: ReasonFrontmatter, Detail: err.Error()}
	}
	if diff := frontmatterDiff(s.Frontmatter, fm); diff != "" {
		return nil, &VerificationError{URI: s.URI, Reason: ReasonFrontmatter, Detail: "differs from the entry: " + diff}
	}
	return &Loaded{Skill: s, Frontmatter: fm, Body: body}, nil
}

// frontmatterDiff names the first field on which the entry's front matter
// and the file's differ ("" when none), both read as JSON.
func frontmatterDiff(entry, file map[string]any) string {
	norm := func(m map[string]any) map[string]any {
		b, _ := json.Marshal(m)
		var v map[string]any
		_ = json.Unmarshal(b, &v)
		return v
	}
	e, f := norm(entry), norm(file)
	for k, v := range f {
		if ev, ok := e[k]; !ok || !reflect.DeepEqual(ev, v) {
			return fmt.Sprintf("%q: file %s, entry %s", k, short(v), short(ev))
		}
	}
	for k, v := range e {
		if _, ok := f[k]; !ok {
			return fmt.Sprintf("%q: file has none, entry %s", k, short(v))
		}
	}
	return ""
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// Read fetches one file of the skill and verifies it against the entry:
// ref is a path relative to the skill's directory (ManifestName,
// "references/FORMS.md") or the file's URI. The file must be listed in
// the entry (checked before any request); the bytes read must have the
// listed size (checked first) and digest. Any failure is a
// *VerificationError and no content. A dynamic skill's files cannot be
// verified: Read refuses them ("unlisted").
func (c *Client) Read(ctx context.Context, s *Skill, ref string) ([]byte, error) {
	uri := ref
	if !strings.Contains(ref, "://") {
		uri = s.Root() + "/" + ref
	}
	var listed *File
	for i := range s.Resources {
		if s.Resources[i].URI == uri {
			listed = &s.Resources[i]
		}
	}
	if listed == nil {
		return nil, &VerificationError{URI: uri, Reason: ReasonUnlisted, Detail: "not in the skill's manifest"}
	}
	res, err := c.c.ReadResource(ctx, uri, nil)
	if err != nil {
		return nil, err
	}
	var data []byte
	found := false
	for _, rc := range res.Contents {
		if rc == nil || rc.URI != uri {
			continue
		}
		found = true
		if rc.Blob != nil {
			data = rc.Blob
		} else {
			data = []byte(rc.Text)
		}
		break
	}
	if !found {
		return nil, &VerificationError{URI: uri, Reason: ReasonSize, Detail: "resources/read returned no contents for it"}
	}
	if int64(len(data)) != listed.Size {
		return nil, &VerificationError{URI: uri, Reason: ReasonSize, Detail: fmt.Sprintf("%d bytes read, the entry lists %d", len(data), listed.Size)}
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != listed.Digest {
		return nil, &VerificationError{URI: uri, Reason: ReasonDigest, Detail: fmt.Sprintf("digest %s, the entry lists %s", got, listed.Digest)}
	}
	return data, nil
}

// ReadDirectory lists the direct children of a skill directory (every
// page, at most MaxPages of them), when the server declares
// directoryRead.
func (c *Client) ReadDirectory(ctx context.Context, uri string) ([]DirEntry, error) {
	var out []DirEntry
	cursor := ""
	cursors := map[string]bool{}
	for page := 0; page < c.opts.MaxPages; page++ {
		p := map[string]string{"uri": uri}
		if cursor != "" {
			p["cursor"] = cursor
		}
		res, err := mcp.CallMethodAs[struct {
			Resources  []DirEntry `json:"resources"`
			NextCursor string     `json:"nextCursor"`
		}](ctx, c.c, &mcp.MethodCall{Method: MethodDirectoryRead, Params: p}, nil)
		if err != nil {
			return nil, err
		}
		for _, e := range res.Resources {
			if !within(strings.TrimSuffix(uri, "/"), e.URI) || strings.Contains(strings.TrimPrefix(e.URI, strings.TrimSuffix(uri, "/")+"/"), "/") {
				return nil, fmt.Errorf("skills: %s: %q is not a direct child", uri, e.URI)
			}
			out = append(out, e)
		}
		if res.NextCursor == "" {
			return out, nil
		}
		if cursors[res.NextCursor] {
			return nil, fmt.Errorf("skills: %s repeated the cursor %q", MethodDirectoryRead, res.NextCursor)
		}
		cursors[res.NextCursor] = true
		cursor = res.NextCursor
	}
	return nil, fmt.Errorf("skills: %s %s has more than %d pages", MethodDirectoryRead, uri, c.opts.MaxPages)
}
