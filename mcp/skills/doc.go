// Package skills implements the MCP Skills extension
// (io.modelcontextprotocol/skills, SEP-2640) on both sides, on mcp's
// extension seam.
//
// A server serves a tree of skills (each a directory holding a SKILL.md
// whose front matter names and describes it) with Serve or ServeDir:
// skills/list and skills/get answer the skill entries (the SKILL.md URI,
// its front matter as JSON, and a manifest of every file with its SHA-256
// digest and size), every file is a resource read with resources/read, and
// with Options.DirectoryRead resources/directory/read lists a skill
// directory's children.
//
// A client enumerates skills with Client.List, and fetches a skill's
// files only when it loads the skill (Client.Load, Client.Read), checking
// each against the entry: size, digest and, for SKILL.md, the front matter
// field by field. Content that fails a check is never returned.
package skills
