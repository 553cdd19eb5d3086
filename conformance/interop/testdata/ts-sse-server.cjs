// A server of the official TypeScript SDK (v1) over its SSEServerTransport
// and nothing else: GET /sse opens a session (its endpoint event names
// /messages?sessionId=...), POST /messages carries its messages, and any
// other request is 404, so a Streamable HTTP client's POST to /sse is
// refused as an HTTP+SSE-only server refuses it. It has one tool, ask,
// that samples the client's model. The first stdout line is
// "listening on http://127.0.0.1:PORT/sse" (TestClientFallsBackAgainstATypeScriptSSEServer).
// Run with NODE_PATH pointing at the node_modules that hold the SDK.
const http = require("node:http");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { SSEServerTransport } = require("@modelcontextprotocol/sdk/server/sse.js");

const transports = new Map();

function newServer() {
  const server = new McpServer({ name: "ts-sse-server", version: "1.0.0" });
  server.registerTool("ask", { description: "asks the client's model a question" }, async () => {
    const res = await server.server.createMessage({
      messages: [{ role: "user", content: { type: "text", text: "Capital of France?" } }],
      maxTokens: 10,
    });
    return { content: [{ type: "text", text: "the model said " + res.content.text }] };
  });
  return server;
}

const httpServer = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://127.0.0.1");
  try {
    if (req.method === "GET" && url.pathname === "/sse") {
      const transport = new SSEServerTransport("/messages", res);
      transports.set(transport.sessionId, transport);
      res.on("close", () => transports.delete(transport.sessionId));
      await newServer().connect(transport);
      return;
    }
    if (req.method === "POST" && url.pathname === "/messages") {
      const transport = transports.get(url.searchParams.get("sessionId"));
      if (!transport) {
        res.writeHead(404).end("unknown session");
        return;
      }
      await transport.handlePostMessage(req, res);
      return;
    }
    res.writeHead(404).end("not found");
  } catch (err) {
    console.error(err);
    if (!res.headersSent) res.writeHead(500).end(String(err));
  }
});

httpServer.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${httpServer.address().port}/sse`);
});
