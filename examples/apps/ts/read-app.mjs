// read-app.mjs reads the example's MCP App with the official TypeScript
// packages: the SDK's client (@modelcontextprotocol/client, 2026-07-28
// pinned, then the legacy handshake) declares the extension, and the
// extension's own helpers and schemas (@modelcontextprotocol/ext-apps)
// check what the server sends: the capability, each tool's _meta.ui
// (getToolUiResourceUri, the visibility helpers, McpUiToolMetaSchema),
// the UI resource listed and read (RESOURCE_MIME_TYPE,
// McpUiResourceMetaSchema), and the tool result the host would forward
// to the page (McpUiToolResultNotificationSchema).
//
//   node read-app.mjs --modules DIR --url http://127.0.0.1:PORT/mcp
//
// DIR is the node_modules directory holding both packages. Prints one
// JSON line per check and exits non-zero when any failed.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const modules = opt('--modules');
const url = opt('--url');
if (!modules || !url) {
  console.error('usage: node read-app.mjs --modules DIR --url URL');
  process.exit(2);
}
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const version = (pkg) => JSON.parse(fs.readFileSync(path.join(modules, pkg, 'package.json'), 'utf8')).version;

const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client/dist/index.mjs');
const ext = await load('@modelcontextprotocol/ext-apps/dist/src/app-bridge.js');
const { EXTENSION_ID, getUiCapability } = await load('@modelcontextprotocol/ext-apps/dist/src/server/index.js');
const schemaJSON = JSON.parse(fs.readFileSync(path.join(modules, '@modelcontextprotocol/ext-apps/dist/src/generated/schema.json'), 'utf8'));

const VIEW = 'ui://forecast/view.html';
let failed = 0;
function check(name, ok, detail) {
  if (!ok) failed++;
  console.log(JSON.stringify({ check: name, ok: !!ok, ...(detail === undefined ? {} : { detail }) }));
}
// parse validates v with one of the extension's zod schemas, and also
// holds it to the members the extension's JSON Schema names (the zod
// schemas let unknown members through; the JSON Schema does not).
function parse(name, schema, def, v) {
  const r = schema.safeParse(v);
  const known = Object.keys(schemaJSON.$defs[def].properties ?? {});
  const unknown = Object.keys(v ?? {}).filter((k) => !known.includes(k));
  check(name, r.success && unknown.length === 0, r.success ? (unknown.length ? { unknown } : v) : r.error.issues);
}

// What a host declares; getUiCapability reads it back as the
// extension's server helpers do.
const uiCapability = { mimeTypes: [ext.RESOURCE_MIME_TYPE] };
check('getUiCapability reads the declaration', getUiCapability({ extensions: { [EXTENSION_ID]: uiCapability } })?.mimeTypes?.includes(ext.RESOURCE_MIME_TYPE));
async function connect(mode, declare) {
  const client = new Client(
    { name: 'roundtrip-apps-check', version: '1.0.0' },
    {
      capabilities: declare ? { extensions: { [EXTENSION_ID]: uiCapability } } : {},
      ...(mode === 'legacy' ? {} : { versionNegotiation: { mode: { pin: mode } } }),
    },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function readApp(mode) {
  const client = await connect(mode, true);
  try {
    const caps = client.getServerCapabilities();
    if (mode !== 'legacy') {
      check(`${mode}: server advertises ${EXTENSION_ID}`, caps?.extensions?.[EXTENSION_ID] !== undefined, caps);
    } else {
      // Not a check: the initialize result of earlier revisions carries
      // no extensions in this SDK's server (see docs/design/apps.md).
      console.log(JSON.stringify({ info: `${mode}: server capabilities`, extensions: caps?.extensions ?? null }));
    }

    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ['forecast', 'forecast_day']) {
      const t = byName[name];
      check(`${mode}: tools/list has ${name}`, !!t);
      if (!t) continue;
      let uri;
      try { uri = ext.getToolUiResourceUri(t); } catch (e) { uri = e.message; }
      check(`${mode}: getToolUiResourceUri(${name})`, uri === VIEW, uri);
      check(`${mode}: ${name} keeps the deprecated flat key`, t._meta?.[ext.RESOURCE_URI_META_KEY] === VIEW, t._meta);
      parse(`${mode}: ${name} _meta.ui is a McpUiToolMeta`, ext.McpUiToolMetaSchema, 'McpUiToolMeta', t._meta?.ui);
    }
    if (byName.forecast && byName.forecast_day) {
      check(`${mode}: forecast is for the model and the app`, !ext.isToolVisibilityAppOnly(byName.forecast) && !ext.isToolVisibilityModelOnly(byName.forecast));
      check(`${mode}: forecast_day is for the app only`, ext.isToolVisibilityAppOnly(byName.forecast_day), byName.forecast_day._meta?.ui);
    }

    const { resources } = await client.listResources();
    const listed = resources.find((r) => r.uri === VIEW);
    check(`${mode}: resources/list has ${VIEW} as ${ext.RESOURCE_MIME_TYPE}`, listed?.mimeType === ext.RESOURCE_MIME_TYPE, listed);
    parse(`${mode}: the listing's _meta.ui is a McpUiResourceMeta`, ext.McpUiResourceMetaSchema, 'McpUiResourceMeta', listed?._meta?.ui);

    const read = await client.readResource({ uri: VIEW });
    const content = read.contents.find((c) => c.uri === VIEW);
    check(`${mode}: resources/read has the page as ${ext.RESOURCE_MIME_TYPE}`, content?.mimeType === ext.RESOURCE_MIME_TYPE, content && { mimeType: content.mimeType });
    check(`${mode}: the page is an HTML document`, typeof content?.text === 'string' && /^<!DOCTYPE html>/i.test(content.text) && content.text.includes('ui/initialize'));
    const meta = content?._meta?.ui;
    parse(`${mode}: the content's _meta.ui is a McpUiResourceMeta`, ext.McpUiResourceMetaSchema, 'McpUiResourceMeta', meta);
    check(`${mode}: the page prefers a border and asks for no permission`, meta?.prefersBorder === true && ext.buildAllowAttribute(meta?.permissions) === '', meta);

    const result = await client.callTool({ name: 'forecast', arguments: { city: 'Lisbon', days: 3 } });
    const r = ext.McpUiToolResultNotificationSchema.safeParse({ method: 'ui/notifications/tool-result', params: result });
    check(`${mode}: the forecast result is a valid ui/notifications/tool-result`, r.success, r.success ? undefined : r.error.issues);
    check(`${mode}: structuredContent has the 3 days`, result.structuredContent?.days?.length === 3, result.structuredContent);
    const text = result.content?.map((c) => c.text).join('\n') ?? '';
    check(`${mode}: a host that declared the extension gets the summary`, text.startsWith('Lisbon, next 3 days') && !text.includes('\nDay 1:'), text);
  } finally {
    await client.close();
  }
  // The same call from a client without the extension: the days as text.
  const plain = await connect(mode, false);
  try {
    const result = await plain.callTool({ name: 'forecast', arguments: { city: 'Lisbon', days: 3 } });
    const text = result.content?.map((c) => c.text).join('\n') ?? '';
    check(`${mode}: a client without the extension gets the days as text`, text.includes('\nDay 1:') && text.includes('\nDay 3:'), text);
    const { tools } = await plain.listTools();
    check(`${mode}: _meta.ui is sent to it too`, tools.every((t) => ext.getToolUiResourceUri(t) === VIEW));
  } finally {
    await plain.close();
  }
}

console.log(JSON.stringify({
  info: 'packages',
  '@modelcontextprotocol/ext-apps': version('@modelcontextprotocol/ext-apps'),
  '@modelcontextprotocol/client': version('@modelcontextprotocol/client'),
}));
for (const mode of ['2026-07-28', 'legacy']) {
  try {
    await readApp(mode);
  } catch (e) {
    check(`${mode}: no error`, false, String(e?.stack ?? e));
  }
}
console.log(JSON.stringify({ summary: failed === 0 ? 'ok' : `${failed} failed` }));
process.exit(failed === 0 ? 0 : 1);
