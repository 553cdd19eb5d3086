package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// An include is a VitePress file include in a site page:
//
//	<<< @/../../examples/quickstart/main.go#server
//
// "@" is the site's root folder; "#name" a region of the file, the lines
// between "// #region name" and "// #endregion name". VitePress renders
// a missing file or region as an error message inside the page, and
// builds anyway: CheckIncludes is what fails instead.
var (
	includeLine = regexp.MustCompile(`^<<<\s*(\S+?)(?:#([\w-]+))?(?:\s*\{[^}]*\})?(?:\s*\[[^\]]*\])?\s*$`)
	regionStart = regexp.MustCompile(`^\s*//\s*#?region\b\s*(.*?)\s*$`)
	regionEnd   = regexp.MustCompile(`^\s*//\s*#?endregion\b\s*(.*?)\s*$`)
	goFence     = regexp.MustCompile("^\\s*(```|~~~)\\s*go\\b")
)

// Include is one `<<<` line of a page.
type Include struct {
	Where  string // page:line
	File   string // the included file, as a path from the site's root
	Region string // "" for the whole file
}

// Pages returns the Markdown files of the site rooted at site, skipping
// node_modules and the folders VitePress writes (.vitepress/dist, cache).
func Pages(site string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(site, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != site && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			out = append(out, path)
		}
		return nil
	})
	return out, err
}

// Includes returns the `<<<` lines of a page's text; where names the
// page in messages.
func Includes(where, text string) []Include {
	var out []Include
	for i, line := range strings.Split(text, "\n") {
		m := includeLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		out = append(out, Include{Where: where + ":" + itoa(i+1), File: m[1], Region: m[2]})
	}
	return out
}

// CheckIncludes returns a Problem for every include of the site's pages
// whose file does not exist, or names a region the file does not open
// with "// #region name" and close, later, with "// #endregion name";
// and for every page that has Go code written into it (a ```go fence):
// the site's Go is included from files that compile and run in the
// tests, never pasted.
func CheckIncludes(site string) ([]Problem, int, error) {
	pages, err := Pages(site)
	if err != nil {
		return nil, 0, err
	}
	var out []Problem
	n := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, 0, err
		}
		rel, _ := filepath.Rel(site, p)
		rel = filepath.ToSlash(rel)
		for i, line := range strings.Split(string(b), "\n") {
			if goFence.MatchString(line) {
				out = append(out, Problem{rel + ":" + itoa(i+1), "```go", "Go code pasted into a page: include it from a Go file (<<< @/path#region)"})
			}
		}
		for _, inc := range Includes(rel, string(b)) {
			n++
			if p := checkInclude(site, p, inc); p != "" {
				out = append(out, Problem{inc.Where, inc.File + regionSuffix(inc.Region), p})
			}
		}
	}
	return out, n, nil
}

func regionSuffix(r string) string {
	if r == "" {
		return ""
	}
	return "#" + r
}

// checkInclude resolves an include as VitePress does ("@/" from the
// site's root, anything else from the page's folder) and checks it.
func checkInclude(site, page string, inc Include) string {
	var path string
	switch {
	case strings.HasPrefix(inc.File, "@/"):
		path = filepath.Join(site, filepath.FromSlash(inc.File[2:]))
	default:
		path = filepath.Join(filepath.Dir(page), filepath.FromSlash(inc.File))
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "no such file"
	}
	if inc.Region == "" {
		return ""
	}
	open := false
	for _, line := range strings.Split(string(b), "\n") {
		if m := regionStart.FindStringSubmatch(line); m != nil && m[1] == inc.Region {
			if open {
				return "region opened twice"
			}
			open = true
			continue
		}
		if m := regionEnd.FindStringSubmatch(line); m != nil && m[1] == inc.Region {
			if !open {
				return "region closed before it is opened"
			}
			return ""
		}
	}
	if open {
		return "region never closed (// #endregion " + inc.Region + ")"
	}
	return "no such region (// #region " + inc.Region + ")"
}
