// legacy-mrtr.mjs drives the everything-server with the official
// TypeScript SDK's v1 client, which speaks the revisions before
// 2026-07-28 (initialize, a session, live server requests). It calls
// every multi round-trip tool and the prompt of the conformance contract
// and checks that each completes: the server answers such a client by
// sending its questions as live requests, including the questions a
// low-level handler built by hand.
//
//   node legacy-mrtr.mjs --sdk DIR --http URL
//   node legacy-mrtr.mjs --sdk DIR --sse URL
//   node legacy-mrtr.mjs --sdk DIR --stdio /path/to/everything-server
//
// --http is Streamable HTTP (the server's /mcp), --sse the HTTP+SSE
// transport of 2024-11-05 (the server's /sse: the SDK's
// SSEClientTransport, the answers POSTed to the endpoint it announces).
//
// DIR is the installed @modelcontextprotocol/sdk package. Prints one
// JSON line per call and exits non-zero when any call failed.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const sdk = opt('--sdk');
const load = (p) => import(pathToFileURL(path.join(sdk, 'dist/esm', p)).href);

const { Client } = await load('client/index.js');
const types = await load('types.js');

const client = new Client(
  { name: 'roundtrip-interop-ts-v1', version: '1.0.0' },
  { capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } } },
);

// Answers a form from its schema: the first enum value, true, 1, or a
// fixed word for strings.
function fill(schema) {
  const out = {};
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    if (Array.isArray(p.enum) && p.enum.length) out[name] = p.enum[0];
    else if (Array.isArray(p.oneOf) && p.oneOf.length) out[name] = p.oneOf[0].const;
    else if (p.type === 'boolean') out[name] = true;
    else if (p.type === 'integer' || p.type === 'number') out[name] = 1;
    else out[name] = name === 'color' ? 'green' : 'Ada';
  }
  return out;
}
const asked = { elicitation: 0, sampling: 0, roots: 0 };
client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
  asked.elicitation++;
  return { action: 'accept', content: fill(req.params.requestedSchema) };
});
client.setRequestHandler(types.CreateMessageRequestSchema, async () => {
  asked.sampling++;
  return { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'interop-model' };
});
client.setRequestHandler(types.ListRootsRequestSchema, async () => {
  asked.roots++;
  return { roots: [{ uri: 'file:///work', name: 'work' }] };
});

let transport;
if (opt('--http')) {
  const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
  transport = new StreamableHTTPClientTransport(new URL(opt('--http')));
} else if (opt('--sse')) {
  const { SSEClientTransport } = await load('client/sse.js');
  transport = new SSEClientTransport(new URL(opt('--sse')));
} else {
  const { StdioClientTransport } = await load('client/stdio.js');
  transport = new StdioClientTransport({ command: opt('--stdio'), args: ['-stdio'] });
}
await client.connect(transport);

const tools = [
  ['test_input_required_result_elicitation', /Hello, Ada!/],
  ['test_input_required_result_sampling', /Sampling result: Paris/],
  ['test_input_required_result_list_roots', /file:\/\/\/work/],
  ['test_input_required_result_request_state', /state-ok/],
  ['test_input_required_result_multiple_inputs', /Received all inputs: name=Ada; greeting=Paris; roots=/],
  ['test_input_required_result_multi_round', /Hello, Ada! Your favorite color is green\./],
  ['test_input_required_result_tampered_state', /requestState verified/],
  ['test_input_required_result_capabilities', /Received input via elicitation: Ada; sampling: Paris/],
];
let failed = 0;
const report = (call, ok, detail) => {
  if (!ok) failed++;
  console.log(JSON.stringify({ call, ok, detail, protocol: transport.protocolVersion ?? null }));
};
for (const [name, want] of tools) {
  try {
    const res = await client.callTool({ name, arguments: {} });
    const text = (res.content ?? []).map((c) => c.text ?? '').join(' ');
    report(name, !res.isError && want.test(text), text);
  } catch (e) {
    report(name, false, String(e?.message ?? e));
  }
}
try {
  const res = await client.getPrompt({ name: 'test_input_required_result_prompt', arguments: {} });
  const text = res.messages.map((m) => m.content?.text ?? '').join(' ');
  report('test_input_required_result_prompt', /Prompt with user context: Ada/.test(text), text);
} catch (e) {
  report('test_input_required_result_prompt', false, String(e?.message ?? e));
}
console.log(JSON.stringify({ summary: true, passed: tools.length + 1 - failed, failed, asked }));
await client.close();
process.exit(failed ? 1 : 0);
