// skills.mjs reads the everything-server's skills (the Skills extension,
// io.modelcontextprotocol/skills, SEP-2640; conformance/everything-server/
// skills.go) with the official TypeScript SDK's 2.x SkillsClient
// (@modelcontextprotocol/client/ext/skills): it lists every skill (every
// page: the server pages one skill at a time), gets one, reads every file
// of every skill (each checked by the SkillsClient against its entry:
// size, digest and, for SKILL.md, the front matter) and reads a skill
// directory (resources/directory/read), at 2026-07-28 (pinned) and over
// the 2025-11-25 handshake.
//
//   node skills.mjs --modules DIR --http URL
//
// DIR is the node_modules directory holding @modelcontextprotocol/client.
// Prints one JSON line per check and a summary, and exits non-zero when
// any check failed.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const modules = opt('--modules');
const url = opt('--http');
if (!modules || !url) {
  console.error('usage: node skills.mjs --modules DIR --http URL');
  process.exit(2);
}
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const version = JSON.parse(fs.readFileSync(path.join(modules, '@modelcontextprotocol/client/package.json'), 'utf8')).version;
const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client/dist/index.mjs');
const { SkillsClient, SKILLS_EXTENSION_ID } = await load('@modelcontextprotocol/client/dist/ext/skills/index.mjs');

let failed = 0;
const summary = { client: version, runs: {} };
function check(name, ok, detail) {
  if (!ok) failed++;
  console.log(JSON.stringify({ check: name, ok: !!ok, ...(detail === undefined ? {} : { detail }) }));
}

async function run(mode) {
  const client = new Client(
    { name: 'roundtrip-interop-ts-v2-skills', version: '1.0.0' },
    mode === 'legacy' ? {} : { versionNegotiation: { mode: { pin: mode } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const got = { skills: [], files: 0, bytes: 0 };
  try {
    const skills = new SkillsClient(client);
    check(`${mode}: the server declares ${SKILLS_EXTENSION_ID} with directoryRead`, skills.supported && skills.directoryRead,
      client.getServerCapabilities()?.extensions);
    const listing = await skills.list();
    got.skills = listing.skills.map((s) => s.uri);
    check(`${mode}: skills/list, every page, every entry valid`, listing.skills.length === 2 && listing.invalid.length === 0, got.skills);
    if (mode !== 'legacy') {
      check(`${mode}: skills/list carries ttlMs and cacheScope`, typeof listing.ttlMs === 'number' && listing.cacheScope === 'public',
        { ttlMs: listing.ttlMs, cacheScope: listing.cacheScope });
    }
    for (const skill of listing.skills) {
      const one = await skills.get(skill.uri);
      check(`${mode}: skills/get ${skill.uri}`, one.skill.uri === skill.uri && JSON.stringify(one.skill.frontmatter) === JSON.stringify(skill.frontmatter));
      const manifest = await skills.read(skill);
      check(`${mode}: ${skill.uri} verified, front matter equal to the entry's`,
        manifest.verified && manifest.frontmatter?.name === skill.frontmatter.name && manifest.body?.length > 0);
      for (const f of skill.resources) {
        const file = await skills.read(skill, f.uri);
        got.files++;
        got.bytes += file.bytes.byteLength;
        check(`${mode}: ${f.uri} verified (${f.size} bytes)`, file.verified && file.bytes.byteLength === f.size);
      }
    }
    const pdf = listing.skills.find((s) => s.frontmatter.name === 'pdf-processing');
    const dir = await skills.readDirectory(pdf.uri.replace(/\/SKILL\.md$/, ''));
    const kids = dir.resources.map((r) => `${r.name}${r.mimeType === 'inode/directory' ? '/' : ''}`).sort();
    check(`${mode}: resources/directory/read lists the skill's children`, kids.join(' ') === 'SKILL.md references/ scripts/', kids);
    let err;
    try {
      await skills.get('skill://no-such-skill/SKILL.md');
    } catch (e) {
      err = e;
    }
    check(`${mode}: skills/get of an unknown skill is -32602`, err?.code === -32602, err && { code: err.code, message: err.message });
  } finally {
    await client.close();
  }
  summary.runs[mode] = got;
}

const started = Date.now();
for (const mode of ['2026-07-28', 'legacy']) {
  try {
    await run(mode);
  } catch (e) {
    check(`${mode}: ran`, false, String(e?.stack ?? e));
  }
}
summary.failed = failed;
summary.ms = Date.now() - started;
console.log(JSON.stringify({ summary }));
process.exit(failed ? 1 : 0);
