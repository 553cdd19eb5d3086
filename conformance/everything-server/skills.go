package main

import (
	"embed"
	"io/fs"

	"github.com/roundtrip-mcp/roundtrip/mcp/skills"
)

// The Skills extension (io.modelcontextprotocol/skills, SEP-2640), with
// directoryRead: the skills of testdata/skills (pdf-processing, with a
// references/ and a scripts/ directory, and acme/release-notes, a skill
// path of two segments), served by mcp/skills. skills.Middleware is in the
// server's options: the suite's scenarios and the TypeScript SDK's
// SkillsClient call the methods without declaring the extension.
//
//go:embed testdata/skills
var skillsTree embed.FS

func (e *everything) addSkills() {
	tree, err := fs.Sub(skillsTree, "testdata/skills")
	if err != nil {
		panic(err)
	}
	if _, err := skills.Serve(e.srv, tree, &skills.Options{DirectoryRead: true, PageSize: 1}); err != nil {
		panic(err)
	}
}
