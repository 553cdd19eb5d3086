package skills

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// The extension's identifier, methods and constants.
const (
	// Extension is the extension identifier, the key of its settings in
	// capabilities.extensions.
	Extension = "io.modelcontextprotocol/skills"
	// MethodList answers one page of skill entries.
	MethodList = "skills/list"
	// MethodGet answers the entry of one skill by its SKILL.md URI.
	MethodGet = "skills/get"
	// MethodDirectoryRead lists the direct children of a directory of a
	// skill (served with Options.DirectoryRead).
	MethodDirectoryRead = "resources/directory/read"
	// DirectoryMIMEType is the mimeType of a directory child that is a
	// directory itself.
	DirectoryMIMEType = "inode/directory"
	// ManifestName is the name of the file that makes a directory a
	// skill.
	ManifestName = "SKILL.md"
	// MaxFiles is the most files a skill may have, SKILL.md included.
	MaxFiles = 512
	// MaxSkillSize is the most bytes a skill's files may hold together.
	MaxSkillSize = 16 << 20
)

const (
	// scheme is the URI scheme of the skills served.
	scheme = "skill"
	// dynamic is the resources value of an entry that publishes no
	// manifest (this package's server always publishes one).
	dynamic = "dynamic"
)

// Settings are the extension's settings, declared inline under Extension
// in capabilities.extensions.
type Settings struct {
	// DirectoryRead says that the server serves resources/directory/read.
	DirectoryRead bool `json:"directoryRead,omitempty"`
}

// Skill is a skill entry, as skills/list and skills/get carry it.
type Skill struct {
	// URI is the URI of the skill's SKILL.md:
	// skill://<skill-path>/SKILL.md, the last segment of the skill path
	// being the skill's name.
	URI string `json:"uri"`
	// Frontmatter is the SKILL.md front matter as a JSON object; name
	// and description are always there.
	Frontmatter map[string]any `json:"frontmatter"`
	// Resources lists every file of the skill, SKILL.md included, each
	// once. A client's entry for a "dynamic" skill has none and Dynamic
	// set.
	Resources []File `json:"-"`
	// Dynamic is set on an entry whose resources is "dynamic".
	Dynamic bool `json:"-"`
	// Meta is the entry's _meta.
	Meta map[string]any `json:"_meta,omitempty"`
}

// File is one file of a skill's manifest.
type File struct {
	URI string `json:"uri"`
	// Digest is "sha256:" and the 64 lowercase hexadecimal digits of the
	// SHA-256 of the file's raw bytes.
	Digest string `json:"digest"`
	// Size is the length of the file's raw bytes.
	Size int64 `json:"size"`
}

// Name is the skill's name (its front matter's name).
func (s *Skill) Name() string { n, _ := s.Frontmatter["name"].(string); return n }

// Description is the skill's front matter description.
func (s *Skill) Description() string { d, _ := s.Frontmatter["description"].(string); return d }

// Root is the URI of the skill's directory (URI without "/SKILL.md").
func (s *Skill) Root() string { return strings.TrimSuffix(s.URI, "/"+ManifestName) }

// MarshalJSON writes resources as the manifest array or "dynamic".
func (s *Skill) MarshalJSON() ([]byte, error) {
	type plain Skill
	var res any = s.Resources
	if s.Dynamic {
		res = dynamic
	} else if s.Resources == nil {
		res = []File{}
	}
	return json.Marshal(struct {
		*plain
		Resources any `json:"resources"`
	}{(*plain)(s), res})
}

// UnmarshalJSON reads an entry; resources must be an array or "dynamic".
func (s *Skill) UnmarshalJSON(b []byte) error {
	type plain Skill
	var v struct {
		*plain
		Resources json.RawMessage `json:"resources"`
	}
	v.plain = (*plain)(s)
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch r := strings.TrimSpace(string(v.Resources)); {
	case r == `"`+dynamic+`"`:
		s.Dynamic, s.Resources = true, nil
	case strings.HasPrefix(r, "["):
		if err := json.Unmarshal(v.Resources, &s.Resources); err != nil {
			return fmt.Errorf("resources: %w", err)
		}
	default:
		return fmt.Errorf("resources is neither an array nor %q", dynamic)
	}
	return nil
}

// DirEntry is a child of a directory in a resources/directory/read
// result.
type DirEntry struct {
	URI      string `json:"uri"`
	Name     string `json:"name"`
	MIMEType string `json:"mimeType,omitempty"`
	Size     *int64 `json:"size,omitempty"`
}

// Declare declares the extension in a client's options (in
// ClientOptions.Extensions.Declared), so that its 2026-07-28 requests
// name it in clientCapabilities.extensions. It returns opts.
func Declare(opts *mcp.ClientOptions) *mcp.ClientOptions {
	if opts.Extensions == nil {
		opts.Extensions = &mcp.ClientExtensions{}
	}
	if opts.Extensions.Declared == nil {
		opts.Extensions.Declared = map[string]json.RawMessage{}
	}
	if _, ok := opts.Extensions.Declared[Extension]; !ok {
		opts.Extensions.Declared[Extension] = json.RawMessage(`{}`)
	}
	return opts
}

// nameRE is the Agent Skills naming rule: 1-64 lowercase letters, digits
// and single hyphens, neither first nor last.
var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// segmentRE is what this package serves as a path segment (a directory of
// the skill path, a file or directory name in a skill): no escaping is
// ever needed, so a URI has one spelling.
var segmentRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// digestRE is the digest format.
var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// validName reports whether name satisfies the naming rule.
func validName(name string) bool { return len(name) <= 64 && nameRE.MatchString(name) }

// checkFrontmatter checks what both sides require of front matter: name
// and description strings within the rule, metadata a map of strings,
// compatibility a short string.
func checkFrontmatter(fm map[string]any) error {
	name, ok := fm["name"].(string)
	if !ok || !validName(name) {
		return fmt.Errorf("front matter name %v must be 1-64 lowercase letters, digits and single hyphens", fm["name"])
	}
	desc, ok := fm["description"].(string)
	if n := len([]rune(desc)); !ok || n == 0 || n > 1024 {
		return fmt.Errorf("front matter description must be a string of 1-1024 characters")
	}
	if c, ok := fm["compatibility"]; ok {
		s, isStr := c.(string)
		if n := len([]rune(s)); !isStr || n == 0 || n > 500 {
			return fmt.Errorf("front matter compatibility must be a string of 1-500 characters")
		}
	}
	if md, ok := fm["metadata"]; ok {
		m, isMap := md.(map[string]any)
		if !isMap {
			return fmt.Errorf("front matter metadata must map strings to strings")
		}
		for k, v := range m {
			if _, isStr := v.(string); !isStr {
				return fmt.Errorf("front matter metadata %q must be a string", k)
			}
		}
	}
	return nil
}
