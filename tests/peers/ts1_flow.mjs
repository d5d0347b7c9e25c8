// End-to-end flow of the official TypeScript MCP SDK 1.x (@modelcontextprotocol/sdk 1.32) against
// mcp-search-proxy: Client + StreamableHTTPClientTransport (initialize handshake, 2025-11-25 era).
//
// Usage: node tests/peers/ts1_flow.mjs URL
//   URL  the proxy endpoint, e.g. http://127.0.0.1:18092/mcp (in front of the demo upstream)
//
// Prints a JSON summary on stdout and exits 0 when every check passed. On the first failed check
// it prints "FAIL: <what>" to stderr and exits 1; an SDK error (transport, protocol, validation)
// exits 2 with its stack. Driven by tests/real_peers.rs.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const EXPECTED_TOOLS = ['mcp_search', 'mcp_describe', 'mcp_call', 'mcp_refresh'];
const REQUEST_TIMEOUT_MS = 20_000;
const TOTAL_TIMEOUT_MS = 45_000; // tests/real_peers.rs kills the process at 60 s

class CheckFailed extends Error {}

function check(cond, what, got) {
  if (!cond) throw new CheckFailed(got === undefined ? what : `${what}; got: ${JSON.stringify(got)}`);
}

const texts = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
const sameJson = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function flow(url, summary) {
  const client = new Client({ name: 'mcp-search-proxy-ts1-flow', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const opts = { timeout: REQUEST_TIMEOUT_MS };
  await client.connect(transport, opts);
  try {
    summary.protocol_version = transport.protocolVersion ?? null;
    summary.session_id = transport.sessionId ?? null;
    summary.server_info = client.getServerVersion() ?? null;

    // --- instructions (initialize result)
    const instructions = client.getInstructions();
    check(instructions, 'the server sent no instructions');
    check(instructions.includes('mcp_search'), 'instructions do not mention mcp_search', instructions);
    // One line per source naming its tool count, e.g. "quillmail: <description> (10 tools)"
    // or "quillmail (10 tools): ..."; tests/real_peers.rs compares the counts with the catalog.
    const sources = Object.fromEntries(
      [...instructions.matchAll(/^([a-z0-9][a-z0-9_.-]*)\b[^\n]*?\((\d+) tools?\)/gm)].map((m) => [m[1], Number(m[2])]),
    );
    check(sources.quillmail > 0, "instructions lack a source line 'quillmail ... (N tools)'", instructions);
    summary.instructions_sources = sources;

    // --- tools/list: exactly the four proxy tools, on one page
    const listing = await client.listTools(undefined, opts);
    const names = listing.tools.map((t) => t.name);
    check(sameJson([...names].sort(), [...EXPECTED_TOOLS].sort()), `tools/list must be exactly ${EXPECTED_TOOLS}`, names);
    check(!listing.nextCursor, 'tools/list has a next page', listing.nextCursor);
    for (const t of listing.tools) {
      check(t.description, `${t.name} has no description`);
      check(t.inputSchema?.type === 'object', `${t.name}.inputSchema is not an object`, t.inputSchema);
    }
    summary.tools = names;

    const callTool = (name, args) => client.callTool({ name, arguments: args }, undefined, opts);
    const mcpCall = (name, args) => callTool('mcp_call', args === undefined ? { name } : { name, arguments: args });

    // --- mcp_search
    let r = await callTool('mcp_search', { query: 'send email' });
    check(!r.isError, 'mcp_search failed', r);
    const hits = r.structuredContent?.results;
    check(Array.isArray(hits), 'mcp_search: no structuredContent.results', r);
    check(hits.length > 0, "mcp_search 'send email' found nothing", r.structuredContent);
    const top = hits[0].name ?? '';
    check(top.startsWith('quillmail-') && top.includes('send'), "mcp_search 'send email': top hit is not a quillmail send tool", top);
    for (const h of hits) {
      for (const key of ['name', 'source', 'description', 'params']) check(key in h, `mcp_search hit lacks '${key}'`, h);
      check(typeof h.params === 'string', "mcp_search hit: 'params' is not a string", h);
    }
    check(texts(r).length > 0, 'mcp_search: no text content block (for clients without structuredContent)', r);
    summary.search_top = hits.slice(0, 3).map((h) => h.name);

    // --- mcp_describe
    r = await callTool('mcp_describe', { names: ['demo-add', 'nope'] });
    check(!r.isError, 'mcp_describe failed', r);
    const sc = r.structuredContent ?? {};
    const tools = sc.tools ?? [];
    check(tools.length > 0 && tools[0].name === 'demo-add', 'mcp_describe: tools[0] is not demo-add', sc);
    const props = tools[0].inputSchema?.properties ?? {};
    check('a' in props && 'b' in props, 'mcp_describe demo-add: inputSchema.properties lacks a/b', tools[0]);
    check(sameJson(sc.not_found, ['nope']), "mcp_describe: not_found must be ['nope']", sc.not_found);
    summary.describe = { tools: tools.map((t) => t.name), not_found: sc.not_found };

    // --- mcp_call demo-add: the upstream result relayed unchanged
    r = await mcpCall('demo-add', { a: 2, b: 3 });
    check(r.isError === false, 'mcp_call demo-add: isError must be false', r);
    check(sameJson(texts(r), ['5']), "mcp_call demo-add: text must be '5'", r);
    check(sameJson(r.structuredContent, { result: 5 }), 'mcp_call demo-add: structuredContent must be {"result":5}', r);
    summary.add = r;

    // --- mcp_call demo-echo: arbitrary text (non-ASCII, quotes, newline) survives the relay
    const sample = 'héllo "wörld" ✓\nline 2';
    r = await mcpCall('demo-echo', { text: sample });
    check(!r.isError && sameJson(texts(r), [sample]), 'mcp_call demo-echo: text not relayed unchanged', r);

    // --- mcp_call demo-counter twice: same upstream session, so n then n+1
    const counts = [];
    for (let i = 0; i < 2; i++) {
      r = await mcpCall('demo-counter', {});
      check(!r.isError, 'mcp_call demo-counter failed', r);
      const t = texts(r);
      check(t.length === 1 && /^\d+$/.test(t[0]), 'mcp_call demo-counter: text is not a number', r);
      const n = Number(t[0]);
      if (r.structuredContent !== undefined) {
        check(sameJson(r.structuredContent, { count: n }), 'mcp_call demo-counter: structuredContent != text', r);
      }
      counts.push(n);
    }
    check(counts[0] >= 1 && counts[1] === counts[0] + 1, 'demo-counter: second value must be first+1 (sticky upstream session)', counts);
    summary.counter = counts;

    // --- mcp_call with a missing required argument
    r = await mcpCall('demo-add', { a: 1 });
    check(r.isError === true, 'mcp_call demo-add without b: isError must be true', r);
    const msg = texts(r).join(' ');
    check(/missing/i.test(msg) && /\bb\b/.test(msg), "mcp_call demo-add without b: message must name the missing 'b'", msg);
    summary.missing_arg_error = msg.slice(0, 200);

    // --- mcp_call of an unknown tool
    r = await mcpCall('no-such-tool');
    check(r.isError === true, 'mcp_call no-such-tool: isError must be true', r);
    check(texts(r).length > 0, 'mcp_call no-such-tool: no error text', r);
    summary.unknown_tool_error = texts(r).join(' ').slice(0, 200);

    // --- mcp_call demo-image: an image block relayed
    r = await mcpCall('demo-image');
    check(!r.isError, 'mcp_call demo-image failed', r);
    const images = (r.content ?? []).filter((c) => c.type === 'image');
    check(images.length === 1, 'mcp_call demo-image: expected one image content block', r);
    check(images[0].mimeType === 'image/png', 'mcp_call demo-image: mimeType must be image/png', images[0].mimeType);
    const raw = Buffer.from(images[0].data, 'base64');
    check(
      raw.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
      'mcp_call demo-image: data is not a base64 PNG',
      images[0].data.slice(0, 40),
    );
    summary.image = { mimeType: images[0].mimeType, bytes: raw.length };
  } finally {
    // HTTP DELETE with Mcp-Session-Id when the server issued one (405 is tolerated by the SDK).
    await transport.terminateSession().catch(() => {});
    await client.close().catch(() => {});
  }
}

async function main() {
  const url = process.argv[2];
  if (!url || process.argv.length !== 3) {
    console.error('usage: node tests/peers/ts1_flow.mjs URL');
    return 64;
  }
  const summary = { client: 'typescript @modelcontextprotocol/sdk 1.x', url };
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the flow did not finish in ${TOTAL_TIMEOUT_MS} ms`)), TOTAL_TIMEOUT_MS);
  });
  try {
    await Promise.race([flow(url, summary), timeout]);
  } catch (e) {
    summary.ok = false;
    summary.failure = `${e.name}: ${e.message}`;
    console.log(JSON.stringify(summary, null, 2));
    if (e instanceof CheckFailed) {
      console.error(`FAIL: ${e.message}`);
      return 1;
    }
    console.error(`FAIL: the SDK raised ${e.name}: ${e.message}`);
    console.error(e.stack);
    return 2;
  } finally {
    clearTimeout(timer);
  }
  summary.ok = true;
  console.log(JSON.stringify(summary, null, 2));
  return 0;
}

process.exitCode = await main();
