package skills

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/roundtrip-mcp/roundtrip/mcp"
)

// Options configure Serve. The zero value serves with the defaults.
type Options struct {
	// DirectoryRead serves resources/directory/read and declares
	// directoryRead in the extension's settings.
	DirectoryRead bool
	// PageSize is the number of entries per page of skills/list and of
	// children per page of resources/directory/read. Zero means 50.
	PageSize int
	// MaxFileSize is the largest file served; a larger one fails Serve.
	// Zero means 1 MiB, so that a file's resources/read answer fits the
	// 4 MiB message a client reads by default, base64-encoded or escaped.
	MaxFileSize int64
	// MaxFiles is the most files of one skill, SKILL.md included. Zero
	// (and anything above MaxFiles) means MaxFiles, 512.
	MaxFiles int
	// MaxSkillSize bounds one skill's files together. Zero (and anything
	// above MaxSkillSize) means MaxSkillSize, 16 MiB.
	MaxSkillSize int64
	// MaxSkills is the most skills served. Zero means 1000.
	MaxSkills int
	// MaxTotalSize bounds every file of every skill together (they are
	// read into memory once, by Serve). Zero means 64 MiB.
	MaxTotalSize int64
	// TTL is the ttlMs of the extension's results. Zero means 5 minutes.
	TTL time.Duration
	// CacheScope is their cacheScope. Empty means public: a catalog
	// is the same for every client.
	CacheScope mcp.CacheScope
}

// Catalog is a set of skills a server serves, read once by Serve.
type Catalog struct {
	opts   Options
	skills []*servedSkill
	byURI  map[string]*servedSkill
	dirs   map[string][]DirEntry // directory URI -> children, sorted by name
	files  map[string]bool       // file URIs (not directories)
	loaded []loaded              // the files, until register
}

type servedSkill struct {
	entry Skill
	raw   json.RawMessage // the entry as JSON, built once
}

// Skills returns the catalog's entries in the order skills/list pages
// them (by URI).
func (c *Catalog) Skills() []*Skill {
	out := make([]*Skill, len(c.skills))
	for i, s := range c.skills {
		e := s.entry
		out[i] = &e
	}
	return out
}

// ServeDir is Serve of the directory dir, opened as an os.Root: a symbolic
// link that leads out of dir is refused, as every symbolic link is.
func ServeDir(srv *mcp.Server, dir string, opts *Options) (*Catalog, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	defer root.Close()
	return Serve(srv, root.FS(), opts)
}

// Serve reads the skills of fsys and serves them on srv: it declares the
// extension (with its settings inline) and registers skills/list,
// skills/get, resources/directory/read (with Options.DirectoryRead) and
// every file as a resource (skill://<skill-path>/<file>; SKILL.md with the
// skill's name and description and mimeType text/markdown).
//
// A skill is a directory holding a SKILL.md; its skill path is the
// directory's path in fsys, whose last segment must be the front matter
// name. Its files are every regular file below it (names starting with "."
// are skipped); a SKILL.md below a skill is one of its files, not a skill.
// Everything is read once, here: digests always describe what is served.
// Serve fails, serving nothing, on a SKILL.md whose front matter does not
// parse or check, a name that needs escaping in a URI, a symbolic link or
// other irregular file, a file or skill over the bounds of opts, or a read
// error.
//
// Clients that do not declare the extension in clientCapabilities (the
// conformance suite, the TypeScript SDK's SkillsClient) are refused -32021
// on 2026-07-28 unless the server's options also carry Middleware.
func Serve(srv *mcp.Server, fsys fs.FS, opts *Options) (*Catalog, error) {
	c, err := load(fsys, opts)
	if err != nil {
		return nil, err
	}
	c.register(srv)
	return c, nil
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.PageSize <= 0 {
		v.PageSize = 50
	}
	if v.MaxFileSize <= 0 {
		v.MaxFileSize = 1 << 20
	}
	if v.MaxFiles <= 0 || v.MaxFiles > MaxFiles {
		v.MaxFiles = MaxFiles
	}
	if v.MaxSkillSize <= 0 || v.MaxSkillSize > MaxSkillSize {
		v.MaxSkillSize = MaxSkillSize
	}
	if v.MaxSkills <= 0 {
		v.MaxSkills = 1000
	}
	if v.MaxTotalSize <= 0 {
		v.MaxTotalSize = 64 << 20
	}
	if v.TTL <= 0 {
		v.TTL = 5 * time.Minute
	}
	if v.CacheScope == "" {
		v.CacheScope = mcp.CachePublic
	}
	return v
}

// maxDepth bounds the directories below the root that are walked.
const maxDepth = 16

// loaded is a file read by load, kept for its resource.
type loaded struct {
	uri, name, mimeType, description string
	data                             []byte
}

type loader struct {
	fsys  fs.FS
	opts  Options
	c     *Catalog
	total int64
	files []loaded
	count int // files of the skill being read
}

func load(fsys fs.FS, opts *Options) (*Catalog, error) {
	l := &loader{fsys: fsys, opts: opts.withDefaults()}
	l.c = &Catalog{opts: l.opts, byURI: map[string]*servedSkill{}, dirs: map[string][]DirEntry{}, files: map[string]bool{}}
	if err := l.walk(".", 0); err != nil {
		return nil, err
	}
	slices.SortFunc(l.c.skills, func(a, b *servedSkill) int { return strings.Compare(a.entry.URI, b.entry.URI) })
	l.c.loaded = l.files
	return l.c, nil
}

// walk looks for skills below dir (a directory of fsys that is not in a
// skill).
func (l *loader) walk(dir string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("skills: %s: deeper than %d directories", dir, maxDepth)
	}
	ents, err := fs.ReadDir(l.fsys, dir)
	if err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	if slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == ManifestName }) {
		if dir == "." {
			return fmt.Errorf("skills: a %s at the root has no skill path (put each skill in a directory of its name)", ManifestName)
		}
		return l.skill(dir)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !e.IsDir() {
			continue
		}
		if !segmentRE.MatchString(e.Name()) {
			return fmt.Errorf("skills: %s: a directory name that needs escaping in a URI", path.Join(dir, e.Name()))
		}
		if err := l.walk(path.Join(dir, e.Name()), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// skill reads the skill in dir.
func (l *loader) skill(dir string) error {
	if len(l.c.skills) >= l.opts.MaxSkills {
		return fmt.Errorf("skills: more than %d skills", l.opts.MaxSkills)
	}
	for _, seg := range strings.Split(dir, "/") {
		if !segmentRE.MatchString(seg) {
			return fmt.Errorf("skills: %s: a directory name that needs escaping in a URI", dir)
		}
	}
	root := scheme + "://" + dir
	s := &servedSkill{entry: Skill{URI: root + "/" + ManifestName}}
	first := len(l.files)
	l.count = 0
	var size int64
	if err := l.files_(dir, root, 0, s, &size); err != nil {
		return err
	}
	// SKILL.md first, then the others by URI.
	files := l.files[first:]
	slices.SortFunc(files, func(a, b loaded) int {
		if a.uri == s.entry.URI || b.uri == s.entry.URI {
			return map[bool]int{true: -1, false: 1}[a.uri == s.entry.URI]
		}
		return strings.Compare(a.uri, b.uri)
	})
	if len(files) == 0 || files[0].uri != s.entry.URI {
		return fmt.Errorf("skills: %s: %s is not a regular file", dir, ManifestName)
	}
	md := &files[0]
	fm, _, err := ParseFrontmatter(md.data)
	if err != nil {
		return fmt.Errorf("skills: %s/%s: %w", dir, ManifestName, err)
	}
	if err := checkFrontmatter(fm); err != nil {
		return fmt.Errorf("skills: %s/%s: %w", dir, ManifestName, err)
	}
	if md, ok := fm["metadata"].(map[string]any); ok {
		for k := range md {
			if strings.HasPrefix(k, "io.modelcontextprotocol/") {
				return fmt.Errorf("skills: %s/%s: front matter metadata key %q uses the prefix reserved for MCP extensions", dir, ManifestName, k)
			}
		}
	}
	if name := fm["name"].(string); name != path.Base(dir) {
		return fmt.Errorf("skills: %s: the front matter name %q is not the directory's name", dir, name)
	}
	s.entry.Frontmatter = fm
	md.name, md.description, md.mimeType = fm["name"].(string), fm["description"].(string), "text/markdown"
	for _, f := range files {
		sum := sha256.Sum256(f.data)
		s.entry.Resources = append(s.entry.Resources, File{URI: f.uri, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(f.data))})
	}
	s.raw, err = json.Marshal(&s.entry)
	if err != nil {
		return fmt.Errorf("skills: %s: %w", dir, err)
	}
	l.c.skills = append(l.c.skills, s)
	l.c.byURI[s.entry.URI] = s
	return nil
}

// files_ reads the files of the skill below dir (its URI uri).
func (l *loader) files_(dir, uri string, depth int, s *servedSkill, size *int64) error {
	if depth > maxDepth {
		return fmt.Errorf("skills: %s: deeper than %d directories", dir, maxDepth)
	}
	ents, err := fs.ReadDir(l.fsys, dir)
	if err != nil {
		return fmt.Errorf("skills: %w", err)
	}
	children := []DirEntry{}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p, u := path.Join(dir, name), uri+"/"+name
		if !segmentRE.MatchString(name) {
			return fmt.Errorf("skills: %s: a name that needs escaping in a URI", p)
		}
		switch t := e.Type(); {
		case t.IsDir():
			children = append(children, DirEntry{URI: u, Name: name, MIMEType: DirectoryMIMEType})
			if err := l.files_(p, u, depth+1, s, size); err != nil {
				return err
			}
			continue
		case !t.IsRegular():
			return fmt.Errorf("skills: %s: not a regular file (symbolic links are not served)", p)
		}
		if l.count++; l.count > l.opts.MaxFiles {
			return fmt.Errorf("skills: %s: more than %d files", s.entry.Root(), l.opts.MaxFiles)
		}
		data, err := l.read(p)
		if err != nil {
			return err
		}
		*size += int64(len(data))
		if *size > l.opts.MaxSkillSize {
			return fmt.Errorf("skills: %s: its files hold more than %d bytes", s.entry.Root(), l.opts.MaxSkillSize)
		}
		n := int64(len(data))
		children = append(children, DirEntry{URI: u, Name: name, MIMEType: mimeOf(name, data), Size: &n})
		l.files = append(l.files, loaded{uri: u, name: strings.TrimPrefix(u, scheme+"://"), mimeType: mimeOf(name, data), data: data})
		l.c.files[u] = true
	}
	slices.SortFunc(children, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
	l.c.dirs[uri] = children
	return nil
}

// read reads one file, at most MaxFileSize bytes of it and of all files.
func (l *loader) read(p string) ([]byte, error) {
	f, err := l.fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("skills: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("skills: %s: not a regular file", p)
	}
	data, err := io.ReadAll(io.LimitReader(f, l.opts.MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("skills: %s: %w", p, err)
	}
	if int64(len(data)) > l.opts.MaxFileSize {
		return nil, fmt.Errorf("skills: %s: larger than %d bytes", p, l.opts.MaxFileSize)
	}
	l.total += int64(len(data))
	if l.total > l.opts.MaxTotalSize {
		return nil, fmt.Errorf("skills: the skills hold more than %d bytes", l.opts.MaxTotalSize)
	}
	return data, nil
}

// mimeOf is the mimeType of a skill file: markdown for .md, the
// extension's type, or text/plain or application/octet-stream by content.
func mimeOf(name string, data []byte) string {
	ext := path.Ext(name)
	if ext == ".md" {
		return "text/markdown"
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	if utf8.Valid(data) {
		return "text/plain"
	}
	return "application/octet-stream"
}

// register declares the extension and serves the methods and resources.
func (c *Catalog) register(srv *mcp.Server) {
	srv.AddExtension(Extension, Settings{DirectoryRead: c.opts.DirectoryRead})
	for _, f := range c.loaded {
		data := f.data
		uri, mt := f.uri, f.mimeType
		n := int64(len(data))
		srv.AddResource(&mcp.Resource{URI: uri, Name: f.name, Description: f.description, MIMEType: mt, Size: &n},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				rc := &mcp.ResourceContents{URI: uri, MIMEType: mt}
				if utf8.Valid(data) {
					rc.Text = string(data)
				} else {
					rc.Blob = data
				}
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc},
					Cache: mcp.Cache{TTLMs: c.opts.TTL.Milliseconds(), CacheScope: c.opts.CacheScope}}, nil
			})
	}
	c.loaded = nil
	srv.AddMethod(&mcp.MethodSpec{Name: MethodList, Extension: Extension, Legacy: true}, c.list)
	srv.AddMethod(&mcp.MethodSpec{Name: MethodGet, Extension: Extension, Legacy: true}, c.get)
	if c.opts.DirectoryRead {
		srv.AddMethod(&mcp.MethodSpec{Name: MethodDirectoryRead, Extension: Extension, Legacy: true}, c.readDirectory)
	}
}

// params decodes a method's params, refusing unknown members' types.
func params(req *mcp.ExtensionRequest, v any) error {
	if len(req.Params) == 0 {
		return nil
	}
	if err := json.Unmarshal(req.Params, v); err != nil {
		return invalidParams("Invalid params: " + err.Error())
	}
	return nil
}

func invalidParams(msg string) error { return mcp.NewError(mcp.CodeInvalidParams, msg, nil) }

// cursorOf reads a page cursor: the decimal index of the page's first
// item, below n.
func cursorOf(cursor *string, n int) (int, error) {
	if cursor == nil {
		return 0, nil
	}
	i, err := strconv.Atoi(*cursor)
	if err != nil || i <= 0 || i >= n || len(*cursor) > 10 {
		return 0, invalidParams("Invalid params: invalid cursor")
	}
	return i, nil
}

func (c *Catalog) cache() (int64, mcp.CacheScope) {
	return c.opts.TTL.Milliseconds(), c.opts.CacheScope
}

func (c *Catalog) list(_ context.Context, req *mcp.ExtensionRequest) (mcp.Result, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if err := params(req, &p); err != nil {
		return nil, err
	}
	start, err := cursorOf(p.Cursor, len(c.skills))
	if err != nil {
		return nil, err
	}
	end := min(start+c.opts.PageSize, len(c.skills))
	page := make([]json.RawMessage, 0, end-start)
	for _, s := range c.skills[start:end] {
		page = append(page, s.raw)
	}
	ttl, scope := c.cache()
	res := struct {
		Skills     []json.RawMessage `json:"skills"`
		NextCursor string            `json:"nextCursor,omitempty"`
		TTLMs      int64             `json:"ttlMs"`
		CacheScope mcp.CacheScope    `json:"cacheScope"`
	}{Skills: page, TTLMs: ttl, CacheScope: scope}
	if end < len(c.skills) {
		res.NextCursor = strconv.Itoa(end)
	}
	return &mcp.ExtensionResult{Value: res}, nil
}

func (c *Catalog) get(_ context.Context, req *mcp.ExtensionRequest) (mcp.Result, error) {
	var p struct {
		URI *string `json:"uri"`
	}
	if err := params(req, &p); err != nil {
		return nil, err
	}
	if p.URI == nil {
		return nil, invalidParams("Invalid params: uri is required")
	}
	s := c.byURI[*p.URI]
	if s == nil {
		return nil, mcp.NewError(mcp.CodeInvalidParams, "Unknown skill: "+*p.URI, map[string]string{"uri": *p.URI})
	}
	ttl, scope := c.cache()
	return &mcp.ExtensionResult{Value: struct {
		Skill      json.RawMessage `json:"skill"`
		TTLMs      int64           `json:"ttlMs"`
		CacheScope mcp.CacheScope  `json:"cacheScope"`
	}{s.raw, ttl, scope}}, nil
}

func (c *Catalog) readDirectory(_ context.Context, req *mcp.ExtensionRequest) (mcp.Result, error) {
	var p struct {
		URI    *string `json:"uri"`
		Cursor *string `json:"cursor"`
	}
	if err := params(req, &p); err != nil {
		return nil, err
	}
	if p.URI == nil {
		return nil, invalidParams("Invalid params: uri is required")
	}
	children, ok := c.dirs[strings.TrimSuffix(*p.URI, "/")]
	if !ok {
		what := "not a directory of a skill"
		if c.files[*p.URI] {
			what = "a file, not a directory"
		}
		return nil, mcp.NewError(mcp.CodeInvalidParams, "Invalid params: "+*p.URI+" is "+what, map[string]string{"uri": *p.URI})
	}
	start, err := cursorOf(p.Cursor, len(children))
	if err != nil {
		return nil, err
	}
	end := min(start+c.opts.PageSize, len(children))
	ttl, scope := c.cache()
	res := struct {
		Resources  []DirEntry     `json:"resources"`
		NextCursor string         `json:"nextCursor,omitempty"`
		TTLMs      int64          `json:"ttlMs"`
		CacheScope mcp.CacheScope `json:"cacheScope"`
	}{Resources: children[start:end], TTLMs: ttl, CacheScope: scope}
	if end < len(children) {
		res.NextCursor = strconv.Itoa(end)
	}
	return &mcp.ExtensionResult{Value: res}, nil
}

// Middleware lets clients that do not declare the extension call its
// methods: on 2026-07-28 mcp answers -32021 to a custom method whose
// extension the request's clientCapabilities do not name, but this
// extension needs nothing of the client (every call is a read), and the
// extension's own consumers (the conformance suite, the TypeScript SDK's
// SkillsClient) do not declare it. Put it in ServerOptions.Middleware of
// a server that serves skills to such clients.
func Middleware(next mcp.ServerHandler) mcp.ServerHandler {
	return func(ctx context.Context, method string, p mcp.Params) (mcp.Result, error) {
		if method == MethodList || method == MethodGet || method == MethodDirectoryRead {
			if r, ok := p.(*mcp.ExtensionRequest); ok && r != nil {
				if _, declared := r.Meta.ClientCapabilities.Extensions[Extension]; !declared {
					ext := make(map[string]json.RawMessage, len(r.Meta.ClientCapabilities.Extensions)+1)
					for k, v := range r.Meta.ClientCapabilities.Extensions {
						ext[k] = v
					}
					ext[Extension] = json.RawMessage(`{}`)
					r.Meta.ClientCapabilities.Extensions = ext
				}
			}
		}
		return next(ctx, method, p)
	}
}
