// Upstream MCP server whose tool asks its caller for input: official TypeScript SDK 2.x
// (@modelcontextprotocol/server createMcpHandler, the 2026-07-28 era with the SDK's stateless
// legacy fallback). The tool returns the SDK's `inputRequired(...)` (a multi-round-trip
// `input_required` result) until the caller answers.
//
// Usage: node tests/peers/upstreams/ts2_ask.mjs [--port N]
// Prints `READY http://127.0.0.1:PORT/mcp` on stdout once listening. Tools:
//   deploy {env}  -> asks "Deploy to <env>?" (elicitation) unless the retry confirms; then "deployed to <env>"
//   plain {}      -> "plain" (asks nothing)
import { createServer } from 'node:http';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { toNodeHandler, localhostHostValidation, localhostOriginValidation } from '@modelcontextprotocol/node';
import { z } from 'zod';

const argv = process.argv.slice(2);
const i = argv.indexOf('--port');
const PORT = Number(i >= 0 ? argv[i + 1] : 0);

const factory = () => {
  const server = new McpServer({ name: 'ask-ts2', version: '0.1.0' });
  const confirmation = z.object({ confirm: z.boolean() });
  server.registerTool(
    'deploy',
    { description: 'Deploy to an environment, after the user confirms.', inputSchema: z.object({ env: z.string() }) },
    async ({ env }, ctx) => {
      const confirmed = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', confirmation);
      if (confirmed?.confirm !== true) {
        return inputRequired({
          inputRequests: { confirm: inputRequired.elicit({ message: `Deploy to ${env}?`, requestedSchema: confirmation }) },
        });
      }
      return { content: [{ type: 'text', text: `deployed to ${env}` }] };
    },
  );
  server.registerTool('plain', { description: 'Return a fixed text.', inputSchema: z.object({}) }, async () => ({
    content: [{ type: 'text', text: 'plain' }],
  }));
  return server;
};

const handler = toNodeHandler(createMcpHandler(factory, {}));
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();
const server = createServer(async (req, res) => {
  if (!validateHost(req, res) || !validateOrigin(req, res)) return;
  if (new URL(req.url, 'http://x').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  await handler(req, res);
});
server.on('error', (err) => {
  console.error(`ts2_ask: ${err.message}`);
  process.exit(1);
});
server.listen(PORT, '127.0.0.1', () => {
  console.log(`READY http://127.0.0.1:${server.address().port}/mcp`);
});
process.on('SIGTERM', () => process.exit(0));
