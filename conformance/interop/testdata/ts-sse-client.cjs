// A client of the official TypeScript SDK (v1) over its SSEClientTransport
// (HTTP+SSE, 2024-11-05): connects to the URL in argv[2], lists the tools,
// calls test_simple_text and test_sampling (answering the server's
// sampling/createMessage request), and prints one JSON line with what it
// got. Run with NODE_PATH pointing at the node_modules that hold the SDK
// (TestTypeScriptSSEClientCallsTools).
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { SSEClientTransport } = require("@modelcontextprotocol/sdk/client/sse.js");
const { CreateMessageRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

async function main() {
  const url = new URL(process.argv[2]);
  const client = new Client({ name: "ts-sse-client", version: "1.0.0" }, { capabilities: { sampling: {} } });
  let sampled = 0;
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    sampled++;
    const asked = req.params.messages[0].content.text;
    return { role: "assistant", model: "ts", content: { type: "text", text: "echo of " + asked } };
  });
  await client.connect(new SSEClientTransport(url));
  const tools = await client.listTools();
  const simple = await client.callTool({ name: "test_simple_text", arguments: {} });
  const sampling = await client.callTool({ name: "test_sampling", arguments: { prompt: "the sea" } });
  console.log(JSON.stringify({
    version: client.getServerVersion() && client.transport && client.transport._protocolVersion,
    server: client.getServerVersion(),
    tools: tools.tools.length,
    simple: simple.content[0].text,
    sampling: sampling.content[0].text,
    sampled,
  }));
  await client.close();
}

main().then(() => process.exit(0), (err) => {
  console.error(err && err.stack ? err.stack : String(err));
  process.exit(1);
});
