// Upstream MCP server for the transport matrix: official TypeScript SDK 2.x
// (@modelcontextprotocol/server createMcpHandler + toNodeHandler from @modelcontextprotocol/node).
// Serves the 2026-07-28 era (stateless, per-request _meta, server/discover) and, unless
// --modern-only, the SDK's stateless legacy fallback for 2025-era (initialize) clients.
//
// Usage: node tests/peers/upstreams/ts2_upstream.mjs [--port N] [--modern-only]
//   --modern-only  createMcpHandler(factory, { legacy: 'reject' }): 2025-era requests are refused
//   --port N       127.0.0.1:N; 0 (the default) picks a free port
//
// Prints `READY http://127.0.0.1:PORT/mcp` on stdout once listening. Tools: the same set as
// py_upstream.py (echo, add, counter, fail, image). There is never a session, so the counter is
// one global counter.
import { createServer } from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { toNodeHandler, localhostHostValidation, localhostOriginValidation } from '@modelcontextprotocol/node';
import { z } from 'zod';

const argv = process.argv.slice(2);
const opt = (k, d) => {
  const i = argv.indexOf(k);
  return i >= 0 ? argv[i + 1] : d;
};
const PORT = Number(opt('--port', 0));
const MODERN_ONLY = argv.includes('--modern-only');
const FLAVOUR = MODERN_ONLY ? 'modern-only' : 'modern+legacy-fallback';

// A 1x1 PNG; the same bytes in every matrix upstream and in tests/transport_matrix.rs.
const PNG_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
let count = 0; // module-level: the factory builds a server per request

const factory = () => {
  const server = new McpServer(
    { name: 'matrix-ts2', version: '0.1.0' },
    { instructions: `Matrix test upstream (TypeScript SDK 2.x, ${FLAVOUR}): echo, add, counter, fail, image.` },
  );
  server.registerTool(
    'echo',
    {
      description: 'Echo the given text back unchanged (text block and structuredContent.text).',
      inputSchema: z.object({ text: z.string() }),
      outputSchema: z.object({ text: z.string() }),
      annotations: { readOnlyHint: true },
    },
    async ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { text } }),
  );
  server.registerTool(
    'add',
    {
      description: 'Add two integer numbers and return the sum (structuredContent {"result": sum}).',
      inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
      outputSchema: z.object({ result: z.number().int() }),
      annotations: { readOnlyHint: true },
    },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { result: a + b } }),
  );
  server.registerTool(
    'counter',
    {
      description: 'Increment and return a counter kept per MCP session (one global counter without a session).',
      inputSchema: z.object({}),
      outputSchema: z.object({ count: z.number().int() }),
    },
    async () => {
      count += 1;
      return { content: [{ type: 'text', text: String(count) }], structuredContent: { count } };
    },
  );
  server.registerTool(
    'fail',
    { description: 'Always fails: the result has isError true and says why.', inputSchema: z.object({}) },
    async () => {
      throw new Error('this tool always fails');
    },
  );
  server.registerTool(
    'image',
    {
      description: 'Return a tiny PNG picture as an image content block.',
      inputSchema: z.object({}),
      annotations: { readOnlyHint: true },
    },
    async () => ({ content: [{ type: 'image', data: PNG_B64, mimeType: 'image/png' }] }),
  );
  return server;
};

const handler = toNodeHandler(createMcpHandler(factory, MODERN_ONLY ? { legacy: 'reject' } : {}));
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();
const server = createServer(async (req, res) => {
  if (!validateHost(req, res) || !validateOrigin(req, res)) return; // 403 on a bad Host/Origin
  if (new URL(req.url, 'http://x').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  await handler(req, res);
});
server.on('error', (err) => {
  console.error(`ts2_upstream: ${err.message}`);
  process.exit(1);
});
server.listen(PORT, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}/mcp`;
  console.log(`READY ${url}`);
  console.error(`ts2_upstream ${FLAVOUR} on ${url}`);
});
process.on('SIGTERM', () => process.exit(0));
