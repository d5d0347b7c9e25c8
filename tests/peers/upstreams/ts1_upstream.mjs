// Upstream MCP server for the transport matrix: official TypeScript SDK 1.x
// (@modelcontextprotocol/sdk: McpServer + StreamableHTTPServerTransport + createMcpExpressApp).
// Speaks the 2025 era only (initialize handshake, LATEST_PROTOCOL_VERSION 2025-11-25).
//
// Usage: node tests/peers/upstreams/ts1_upstream.mjs [--port N] [--stateless] [--json]
//   (default)    stateful: one transport per Mcp-Session-Id, SSE replies, GET stream, DELETE ends it
//   --stateless  no session id; a fresh server + transport per POST; GET/DELETE -> 405
//   --json       application/json replies instead of SSE
//   --port N     127.0.0.1:N; 0 (the default) picks a free port
//
// Prints `READY http://127.0.0.1:PORT/mcp` on stdout once listening. Tools: the same set as
// py_upstream.py (echo, add, counter, fail, image).
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const argv = process.argv.slice(2);
const opt = (k, d) => {
  const i = argv.indexOf(k);
  return i >= 0 ? argv[i + 1] : d;
};
const PORT = Number(opt('--port', 0));
const STATELESS = argv.includes('--stateless');
const JSON_MODE = argv.includes('--json');
const FLAVOUR = `${STATELESS ? 'stateless' : 'stateful'}-${JSON_MODE ? 'json' : 'sse'}`;

// A 1x1 PNG; the same bytes in every matrix upstream and in tests/transport_matrix.rs.
const PNG_B64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const NO_SESSION = '<no-session>';
// counter state: session id (or NO_SESSION) -> count; module-level so that stateless mode,
// which builds a server per request, still counts.
const counts = new Map();

function buildServer() {
  const server = new McpServer(
    { name: 'matrix-ts1', version: '0.1.0' },
    { instructions: `Matrix test upstream (TypeScript SDK 1.x, ${FLAVOUR}): echo, add, counter, fail, image.` },
  );
  server.registerTool(
    'echo',
    {
      description: 'Echo the given text back unchanged (text block and structuredContent.text).',
      inputSchema: { text: z.string() },
      outputSchema: { text: z.string() },
      annotations: { readOnlyHint: true },
    },
    async ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { text } }),
  );
  server.registerTool(
    'add',
    {
      description: 'Add two integer numbers and return the sum (structuredContent {"result": sum}).',
      inputSchema: { a: z.number().int(), b: z.number().int() },
      outputSchema: { result: z.number().int() },
      annotations: { readOnlyHint: true },
    },
    async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { result: a + b } }),
  );
  server.registerTool(
    'counter',
    {
      description: 'Increment and return a counter kept per MCP session (one global counter without a session).',
      inputSchema: {},
      outputSchema: { count: z.number().int() },
    },
    async (_args, extra) => {
      const key = extra.sessionId ?? NO_SESSION;
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      return { content: [{ type: 'text', text: String(n) }], structuredContent: { count: n } };
    },
  );
  server.registerTool(
    'fail',
    { description: 'Always fails: the result has isError true and says why.', inputSchema: {} },
    async () => {
      throw new Error('this tool always fails');
    },
  );
  server.registerTool(
    'image',
    { description: 'Return a tiny PNG picture as an image content block.', inputSchema: {}, annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: 'image', data: PNG_B64, mimeType: 'image/png' }] }),
  );
  return server;
}

// express + express.json() + DNS-rebinding protection (Host must be a loopback name).
const app = createMcpExpressApp({ host: '127.0.0.1' });

if (STATELESS) {
  app.post('/mcp', async (req, res) => {
    const server = buildServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: JSON_MODE });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, req.body);
  });
  const m405 = (_req, res) =>
    res.status(405).set('Allow', 'POST').json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
  app.get('/mcp', m405);
  app.delete('/mcp', m405);
} else {
  const transports = {};
  app.post('/mcp', async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports[sid] : undefined;
    if (!transport) {
      if (sid || !isInitializeRequest(req.body)) {
        // Unknown session -> 404 (the client must initialize again); none on a non-initialize -> 400.
        return res.status(sid ? 404 : 400).json({
          jsonrpc: '2.0',
          error: { code: -32000, message: sid ? 'Session not found' : 'Bad Request: No valid session ID provided' },
          id: null,
        });
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: JSON_MODE,
        onsessioninitialized: (id) => {
          transports[id] = transport;
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) delete transports[transport.sessionId];
      };
      await buildServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
  const bySession = async (req, res) => {
    const sid = req.headers['mcp-session-id'];
    const t = sid && transports[sid];
    if (!t) return res.status(sid ? 404 : 400).send(sid ? 'Session not found' : 'Missing session ID');
    await t.handleRequest(req, res);
  };
  app.get('/mcp', bySession);
  app.delete('/mcp', bySession);
}

const listener = app.listen(PORT, '127.0.0.1', (err) => {
  if (err) {
    console.error(`ts1_upstream: cannot listen on 127.0.0.1:${PORT}: ${err.message}`);
    process.exit(1);
  }
  const url = `http://127.0.0.1:${listener.address().port}/mcp`;
  console.log(`READY ${url}`);
  console.error(`ts1_upstream ${FLAVOUR} on ${url}`);
});
listener.on('error', (err) => {
  console.error(`ts1_upstream: ${err.message}`);
  process.exit(1);
});
process.on('SIGTERM', () => process.exit(0));
