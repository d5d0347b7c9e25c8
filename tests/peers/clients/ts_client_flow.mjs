// The transport-matrix client flow with the official TypeScript SDKs.
//
// Usage: node tests/peers/clients/ts_client_flow.mjs URL SDK MODE [PREFIX]
//   URL     the proxy endpoint (http://127.0.0.1:PORT/mcp)
//   SDK     ts1: @modelcontextprotocol/sdk 1.x (Client + StreamableHTTPClientTransport; 2025 era only)
//           ts2: @modelcontextprotocol/client 2.x (same classes, with versionNegotiation)
//   MODE    ts1: legacy. ts2: legacy | auto | 2026-07-28 (versionNegotiation.mode; a version is a pin)
//   PREFIX  prepended to the upstream tool names (e.g. "matrix-" behind LiteLLM); default ""
//
// Runs the shared flow of tests/peers/clients/ (the same steps as py_client_flow.py): connect,
// tools/list, mcp_search "add two numbers", mcp_describe add, mcp_call add/echo/fail/image and
// counter twice. Each step is recorded, never asserted: the summary (JSON on stdout) carries what
// came back (content, structuredContent, isError as on the wire, or the SDK's error) and
// tests/transport_matrix.rs applies the shared assertions. Exit 0 whenever a summary was
// printed, even when steps failed; 64 on bad usage.

// The text the echo step sends; tests/transport_matrix.rs has the same constant.
const ECHO_SAMPLE = 'héllo "wörld" ✓ 🦀 back\\slash tab\tend\nline 2';
const REQUEST_TIMEOUT_MS = 20_000;
const TOTAL_TIMEOUT_MS = 45_000; // the Rust side kills the process at 60 s

const describeError = (e) => `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`.slice(0, 2000);
const wire = (r) => {
  const out = {};
  for (const k of ['content', 'structuredContent', 'isError']) if (r?.[k] !== undefined) out[k] = r[k];
  return out;
};

async function loadSdk(sdk, mode) {
  if (sdk === 'ts1') {
    if (mode !== 'legacy') throw new Error('the TS SDK 1.x speaks only the legacy era (MODE must be legacy)');
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return {
      name: 'typescript @modelcontextprotocol/sdk 1.x',
      client: new Client({ name: 'matrix-ts1-client', version: '0.1.0' }),
      Transport: StreamableHTTPClientTransport,
    };
  }
  const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
  const negotiation = mode === 'auto' || mode === 'legacy' ? mode : { pin: mode };
  return {
    name: 'typescript @modelcontextprotocol/client 2.x',
    client: new Client({ name: 'matrix-ts2-client', version: '0.1.0' }, { versionNegotiation: { mode: negotiation } }),
    Transport: StreamableHTTPClientTransport,
  };
}

async function record(summary, name, fn) {
  const t0 = Date.now();
  try {
    summary.steps[name] = { ok: true, value: await fn() };
  } catch (e) {
    summary.steps[name] = { ok: false, error: describeError(e) };
  }
  summary.steps[name].ms = Date.now() - t0;
}

async function flow(url, sdk, mode, prefix, summary) {
  const { name, client, Transport } = await loadSdk(sdk, mode);
  summary.client = name;
  const transport = new Transport(new URL(url));
  const opts = { timeout: REQUEST_TIMEOUT_MS };
  const t0 = Date.now();
  try {
    await client.connect(transport, opts);
  } catch (e) {
    summary.steps.connect = { ok: false, error: describeError(e), ms: Date.now() - t0 };
    await client.close().catch(() => {});
    return;
  }
  summary.steps.connect = {
    ok: true,
    value: {
      protocol_version: client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null,
      instructions: (client.getInstructions?.() ?? '').slice(0, 500),
    },
    ms: Date.now() - t0,
  };
  try {
    const call = async (tool, args) => wire(await client.callTool({ name: tool, arguments: args }, undefined, opts));
    const mcpCall = (tool, args) => call('mcp_call', { name: prefix + tool, arguments: args });

    await record(summary, 'tools_list', async () => (await client.listTools(undefined, opts)).tools.map((t) => t.name));
    await record(summary, 'search', async () => {
      const r = await call('mcp_search', { query: 'add two numbers' });
      return { isError: r.isError ?? false, hits: (r.structuredContent?.results ?? []).map((h) => h.name) };
    });
    await record(summary, 'describe', async () => {
      const r = await call('mcp_describe', { names: [prefix + 'add'] });
      return { isError: r.isError ?? false, tools: r.structuredContent?.tools, not_found: r.structuredContent?.not_found };
    });
    await record(summary, 'add', () => mcpCall('add', { a: 2, b: 3 }));
    await record(summary, 'echo', () => mcpCall('echo', { text: ECHO_SAMPLE }));
    await record(summary, 'fail', () => mcpCall('fail', {}));
    await record(summary, 'image', () => mcpCall('image', {}));
    await record(summary, 'counter', async () => [await mcpCall('counter', {}), await mcpCall('counter', {})]);
  } finally {
    // DELETE with Mcp-Session-Id when the server issued one (405 is tolerated by the SDK).
    await transport.terminateSession?.().catch(() => {});
    await client.close().catch((e) => {
      summary.close_error = describeError(e);
    });
  }
}

async function main() {
  const [url, sdk, mode, prefix = ''] = process.argv.slice(2);
  if (!url || !['ts1', 'ts2'].includes(sdk) || !mode || process.argv.length > 6) {
    console.error('usage: node tests/peers/clients/ts_client_flow.mjs URL ts1|ts2 MODE [PREFIX]');
    return 64;
  }
  const summary = { client: sdk, mode, echo_sent: ECHO_SAMPLE, steps: {} };
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the flow did not finish in ${TOTAL_TIMEOUT_MS} ms`)), TOTAL_TIMEOUT_MS);
  });
  try {
    await Promise.race([flow(url, sdk, mode, prefix, summary), timeout]);
  } catch (e) {
    summary.aborted = describeError(e);
  } finally {
    clearTimeout(timer);
  }
  console.log(JSON.stringify(summary, null, 1));
  return 0;
}

process.exitCode = await main();
// Open sockets or timers of a failed SDK must not keep the process alive.
setTimeout(() => process.exit(process.exitCode ?? 0), 100).unref();
