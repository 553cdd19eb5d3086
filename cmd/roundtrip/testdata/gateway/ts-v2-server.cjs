// ts-v2-server.cjs: a 2026-07-28 upstream built with the official
// TypeScript SDK v2 server, over stdio. Its tools ask through
// input_required rounds (multi round-trip):
//   provision(name): asks a region, then (second round) a size;
//   summarize(text): asks the client's model for a summary (sampling).
//
// A test peer: its requestState is plain JSON, not integrity-protected
// as a real server's must be (the gateway seals what it passes on).
//
//   node ts-v2-server.cjs NODE_MODULES
const path = require('node:path');
const { createRequire } = require('node:module');
const req = createRequire(path.join(process.argv[2], 'noop.js'));
const { McpServer, inputRequired } = req('@modelcontextprotocol/server');
const { serveStdio } = req('@modelcontextprotocol/server/stdio');
const z = req('zod');

// serveStdio picks the era from the opening exchange (server/discover or
// initialize) and pins one server of the factory to the connection.
serveStdio(() => {
  const server = new McpServer({ name: 'ts-v2-upstream', version: '1.0.0' });

  server.registerTool('provision', { description: 'Asks a region, then a size.', inputSchema: z.object({ name: z.string() }) },
    async ({ name }, ctx) => {
      const r = ctx.mcpReq.inputResponses || {};
      const state = ctx.mcpReq.requestState();
      if (!state) {
        return inputRequired({
          inputRequests: { region: inputRequired.elicit({ message: 'Which region?', requestedSchema: {
            type: 'object', properties: { region: { type: 'string', enum: ['eu-west-1', 'us-east-1'] } }, required: ['region'] } }) },
          requestState: JSON.stringify({ round: 1 }),
        });
      }
      const s = JSON.parse(state);
      if (s.round === 1) {
        const region = r.region && r.region.action === 'accept' ? r.region.content.region : undefined;
        if (!region) return { content: [{ type: 'text', text: 'declined' }], isError: true };
        return inputRequired({
          inputRequests: { size: inputRequired.elicit({ message: `How many GB in ${region}?`, requestedSchema: {
            type: 'object', properties: { gb: { type: 'integer' } }, required: ['gb'] } }) },
          requestState: JSON.stringify({ round: 2, region }),
        });
      }
      const gb = r.size && r.size.action === 'accept' ? r.size.content.gb : undefined;
      return { content: [{ type: 'text', text: `Provisioned ${name} in ${s.region} with ${gb} GB.` }] };
    });

  server.registerTool('summarize', { description: 'Asks the model for a summary.', inputSchema: z.object({ text: z.string() }) },
    async ({ text }, ctx) => {
      const r = ctx.mcpReq.inputResponses || {};
      if (!r.summary) {
        return inputRequired({
          inputRequests: { summary: inputRequired.createMessage({ maxTokens: 50,
            messages: [{ role: 'user', content: { type: 'text', text: `Summarize: ${text}` } }] }) },
          requestState: 'asked',
        });
      }
      const c = r.summary.content;
      return { content: [{ type: 'text', text: `Summary: ${c && c.text}` }] };
    });

  return server;
});
