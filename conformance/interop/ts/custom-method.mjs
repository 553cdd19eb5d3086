// custom-method.mjs calls a custom method of the everything-server with
// the official TypeScript SDK's 2.x client (@modelcontextprotocol/client):
// the server advertises its own extension io.roundtrip/echo
// (conformance/everything-server/extension.go), the client declares it
// and sends io.roundtrip/echo/say through its generic request method,
// with a result schema, and receives the extension's notifications
// io.roundtrip/echo/heard. It runs at 2026-07-28 (pinned) over
// Streamable HTTP and over stdio, checks that a request that does not
// declare the extension is refused (-32021), and calls the method over
// the 2025-11-25 handshake, where it is a plain method of the session.
//
//   node custom-method.mjs --modules DIR --http URL [--stdio BIN]
//
// DIR is the node_modules directory holding @modelcontextprotocol/client.
// Prints one JSON line per check and exits non-zero when any failed.
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
const bin = opt('--stdio');
if (!modules || !url) {
  console.error('usage: node custom-method.mjs --modules DIR --http URL [--stdio BIN]');
  process.exit(2);
}
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const version = JSON.parse(fs.readFileSync(path.join(modules, '@modelcontextprotocol/client/package.json'), 'utf8')).version;
const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client/dist/index.mjs');
const { StdioClientTransport } = await load('@modelcontextprotocol/client/dist/stdio.mjs');

const EXT = 'io.roundtrip/echo';
const SAY = 'io.roundtrip/echo/say';
const HEARD = 'io.roundtrip/echo/heard';

let failed = 0;
function check(name, ok, detail) {
  if (!ok) failed++;
  console.log(JSON.stringify({ check: name, ok: !!ok, ...(detail === undefined ? {} : { detail }) }));
}

// A Standard Schema (what the client's request and notification handler
// take for methods outside the specification) that accepts an object
// and hands it on as it is; the checks below look at its members.
const anObject = {
  '~standard': {
    version: 1,
    vendor: 'roundtrip-interop',
    validate: (v) =>
      v !== null && typeof v === 'object' && !Array.isArray(v) ? { value: v } : { issues: [{ message: 'not an object' }] },
  },
};

function transportFor(kind) {
  return kind === 'stdio' ? new StdioClientTransport({ command: bin, args: ['-stdio'] }) : new StreamableHTTPClientTransport(new URL(url));
}

async function connect(kind, mode, declare) {
  const client = new Client(
    { name: 'roundtrip-interop-ts-v2-custom', version: '1.0.0' },
    {
      capabilities: declare ? { extensions: { [EXT]: {} } } : {},
      ...(mode === 'legacy' ? {} : { versionNegotiation: { mode: { pin: mode } } }),
    },
  );
  const heard = [];
  client.setNotificationHandler(HEARD, { params: anObject }, (params) => {
    heard.push({ index: params.index, text: params.text });
  });
  await client.connect(transportFor(kind));
  return { client, heard };
}

async function say(kind, mode) {
  const label = `${kind} ${mode}`;
  const { client, heard } = await connect(kind, mode, true);
  try {
    if (mode !== 'legacy') {
      const caps = client.getServerCapabilities();
      check(`${label}: server advertises ${EXT}`, caps?.extensions?.[EXT]?.maxText === 1024, caps?.extensions);
    }
    const res = await client.request({ method: SAY, params: { text: 'hi', times: 3 } }, anObject);
    check(`${label}: ${SAY} answers`, res.text === 'hi' && res.times === 3 && res.echoed === 'hi hi hi', res);
    if (mode !== 'legacy') {
      check(`${label}: the result is complete`, res.resultType === undefined || res.resultType === 'complete', res.resultType);
    }
    // The notifications come before the response on the request's
    // stream; a stdio client reads them off the same pipe.
    check(
      `${label}: ${HEARD} received in order`,
      heard.length === 3 && heard.every((h, i) => h.index === i && h.text === 'hi'),
      heard,
    );
    let err;
    try {
      await client.request({ method: SAY, params: { text: 'hi', times: 9 } }, anObject);
    } catch (e) {
      err = e;
    }
    check(`${label}: invalid params are -32602`, err?.code === -32602, err && { code: err.code, message: err.message });
  } finally {
    await client.close();
  }
}

async function undeclared(kind) {
  const { client } = await connect(kind, '2026-07-28', false);
  try {
    let err;
    try {
      await client.request({ method: SAY, params: { text: 'hi' } }, anObject);
    } catch (e) {
      err = e;
    }
    const required = err?.data?.requiredCapabilities?.extensions;
    check(`${kind}: a request that does not declare ${EXT} is -32021`, err?.code === -32021 && required?.[EXT] !== undefined, err && { code: err.code, data: err.data });
  } finally {
    await client.close();
  }
}

const started = Date.now();
const runs = [
  ['http', '2026-07-28', say],
  ['http', 'legacy', say],
  ['http', null, undeclared],
];
if (bin) runs.push(['stdio', '2026-07-28', say]);
for (const [kind, mode, fn] of runs) {
  try {
    await fn(kind, mode);
  } catch (e) {
    check(`${kind} ${mode ?? ''}: ran`, false, String(e?.stack ?? e));
  }
}
console.log(JSON.stringify({ summary: { client: version, failed, ms: Date.now() - started } }));
process.exit(failed ? 1 : 0);
