package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/roundtrip-mcp/roundtrip/internal/testutil"
	"github.com/roundtrip-mcp/roundtrip/mcp"
	"github.com/roundtrip-mcp/roundtrip/mcp/skills"
)

// The official TypeScript SDK's 2.x SkillsClient
// (@modelcontextprotocol/client/ext/skills, pinned in scripts/tools.sh)
// reads the everything-server's skills: every page of skills/list,
// skills/get, every file verified against its entry (size, digest, the
// SKILL.md front matter), resources/directory/read, at 2026-07-28 and
// over the 2025-11-25 handshake (ts/skills.mjs).
func TestTypeScriptSkillsClientReadsTheSkills(t *testing.T) {
	t.Parallel()
	node, modules := tsSDK(t)
	if _, err := os.Stat(filepath.Join(modules, "@modelcontextprotocol", "client", "dist", "ext", "skills", "index.mjs")); err != nil {
		if os.Getenv("ROUNDTRIP_REQUIRE_TS_SDK") != "" {
			t.Fatalf("the TypeScript SDK's ext/skills is missing: %v", err)
		}
		t.Skipf("the TypeScript SDK 2.x client with ext/skills is not installed: %v", err)
	}
	u := startHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("ts", "skills.mjs"), "--modules", modules, "--http", u)
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the TypeScript SkillsClient: %v\n%s", err, stderr.String())
	}
	var last struct {
		Summary struct {
			Client string `json:"client"`
			Failed int    `json:"failed"`
			Runs   map[string]struct {
				Skills []string `json:"skills"`
				Files  int      `json:"files"`
			} `json:"runs"`
		} `json:"summary"`
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) == 0 || json.Unmarshal(lines[len(lines)-1], &last) != nil {
		t.Fatalf("no summary line in %q", out)
	}
	s := last.Summary
	for _, mode := range []string{"2026-07-28", "legacy"} {
		if r := s.Runs[mode]; s.Failed != 0 || len(r.Skills) != 2 || r.Files != 5 {
			t.Errorf("%s: %+v (failed %d); want 2 skills and 5 files verified", mode, r, s.Failed)
		}
	}
}

// Our own client reads the same skills from the same binary over HTTP and
// stdio: every file verified, the directory read.
func TestSkillsClientReadsTheEverythingServer(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]*mcp.Client{
		"http":  httpClient(t, startHTTP(t), skills.Declare(&mcp.ClientOptions{})),
		"stdio": stdioClient(t, skills.Declare(&mcp.ClientOptions{})),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			sc := skills.NewClient(c, nil)
			list, err := sc.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			files := 0
			for _, s := range list {
				if _, err := sc.Load(ctx, s); err != nil {
					t.Fatal(err)
				}
				for _, f := range s.Resources {
					if _, err := sc.Read(ctx, s, f.URI); err != nil {
						t.Fatal(err)
					}
					files++
				}
			}
			if len(list) != 2 || files != 5 {
				t.Errorf("%d skills, %d files; want 2 and 5", len(list), files)
			}
			kids, err := sc.ReadDirectory(ctx, "skill://pdf-processing")
			if err != nil || len(kids) != 3 {
				t.Errorf("directory: %v, %v", kids, err)
			}
		})
	}
}
