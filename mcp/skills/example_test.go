package skills_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing/fstest"

	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/skills"
)

// A server serves a tree of skills; a client lists them, loads one (its
// SKILL.md fetched and verified against the entry) and reads a file of it
// on demand.
func Example() {
	tree := fstest.MapFS{
		"pdf-processing/SKILL.md":            {Data: []byte("---\nname: pdf-processing\ndescription: Extract text from PDF files.\n---\nRead references/FORMS.md to fill a form.\n")},
		"pdf-processing/references/FORMS.md": {Data: []byte("# Forms\n")},
	}
	srv := mcp.NewServer(mcp.Implementation{Name: "skills", Version: "1.0.0"},
		&mcp.ServerOptions{Middleware: []mcp.ServerMiddleware{skills.Middleware}}) // for clients that do not declare the extension
	if _, err := skills.Serve(srv, tree, &skills.Options{DirectoryRead: true}); err != nil {
		panic(err)
	}
	ts := httptest.NewServer(mcp.NewHTTPHandler(srv, nil))
	defer ts.Close()

	c := mcp.NewClient(mcp.NewHTTPClientTransport(ts.URL+"/mcp", nil), skills.Declare(&mcp.ClientOptions{}))
	defer c.Close()
	ctx := context.Background()
	sc := skills.NewClient(c, nil)
	list, err := sc.List(ctx)
	if err != nil {
		panic(err)
	}
	for _, s := range list {
		fmt.Println(s.URI, "-", s.Description(), "-", len(s.Resources), "files")
	}
	loaded, err := sc.Load(ctx, list[0]) // SKILL.md: size, digest and front matter checked
	if err != nil {
		panic(err)
	}
	fmt.Printf("body: %q\n", loaded.Body)
	forms, err := sc.Read(ctx, list[0], "references/FORMS.md")
	if err != nil {
		panic(err)
	}
	fmt.Printf("FORMS.md: %q\n", forms)
	// Output:
	// skill://pdf-processing/SKILL.md - Extract text from PDF files. - 2 files
	// body: "Read references/FORMS.md to fill a form.\n"
	// FORMS.md: "# Forms\n"
}
