// ts-client.cjs: the official TypeScript SDK's clients through the
// gateway. v2 is the SDK v2 client pinned to 2026-07-28 (it gets the
// gateway's questions as input_required rounds, and has no other way to
// get them); v1 is the SDK v1 client, a 2025-11-25 session (questions
// come live, on the session). Each call's questions are answered from
// their schema (the first enum value, 1, true, "x") and sampling with
// "a summary". Prints one JSON line per call; exits 1 when a call threw.
//
//   node ts-client.cjs NODE_MODULES v1|v2 URL TOOL ARGS-JSON [TOOL ARGS-JSON...]
//   node ts-client.cjs NODE_MODULES v1|v2 URL --list
const path = require('node:path');
const { createRequire } = require('node:module');
const [modules, sdk, url, ...rest] = process.argv.slice(2);
const req = createRequire(path.join(modules, 'noop.js'));

function fill(schema) {
  const out = {};
  for (const [k, p] of Object.entries((schema && schema.properties) || {})) {
    if (p.enum) out[k] = p.enum[0];
    else if (p.oneOf) out[k] = p.oneOf[0].const;
    else if (p.type === 'integer' || p.type === 'number') out[k] = p.minimum ?? 1;
    else if (p.type === 'boolean') out[k] = true;
    else if (p.type === 'array') out[k] = [];
    else out[k] = 'x';
  }
  return out;
}

let asked = [];
const elicit = async (r) => {
  asked.push('elicitation');
  if (r.params.mode === 'url') return { action: 'decline' };
  return { action: 'accept', content: fill(r.params.requestedSchema) };
};
const sample = async () => {
  asked.push('sampling');
  return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'a summary' }, stopReason: 'endTurn' };
};
const roots = async () => { asked.push('roots'); return { roots: [{ uri: 'file:///tmp', name: 'tmp' }] }; };

async function main() {
  let client;
  const caps = { capabilities: { elicitation: { form: {} }, sampling: {}, roots: {} } };
  if (sdk === 'v2') {
    const { Client, StreamableHTTPClientTransport } = req('@modelcontextprotocol/client');
    client = new Client({ name: 'ts-v2-client', version: '1.0.0' }, { ...caps, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    client.setRequestHandler('elicitation/create', elicit);
    client.setRequestHandler('sampling/createMessage', sample);
    client.setRequestHandler('roots/list', roots);
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  } else {
    const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = req('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const t = req('@modelcontextprotocol/sdk/types.js');
    client = new Client({ name: 'ts-v1-client', version: '1.0.0' }, caps);
    client.setRequestHandler(t.ElicitRequestSchema, elicit);
    client.setRequestHandler(t.CreateMessageRequestSchema, sample);
    client.setRequestHandler(t.ListRootsRequestSchema, roots);
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  }
  if (rest[0] === '--list') {
    const tools = await client.listTools();
    console.log(JSON.stringify({ tools: tools.tools.map((t) => t.name) }));
    await client.close();
    return;
  }
  let failed = false;
  for (let i = 0; i < rest.length; i += 2) {
    asked = [];
    const tool = rest[i];
    try {
      const res = await client.callTool({ name: tool, arguments: JSON.parse(rest[i + 1]) }, undefined, { timeout: 30000 });
      const text = (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
      console.log(JSON.stringify({ tool, isError: !!res.isError, text, asked }));
    } catch (e) {
      failed = true;
      console.log(JSON.stringify({ tool, error: String(e && e.message || e), asked }));
    }
  }
  await client.close();
  process.exit(failed ? 1 : 0);
}
main().catch((e) => { console.error(e); process.exit(2); });
