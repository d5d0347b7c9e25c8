// Calls tools that ask their caller something (py_talk.py, ts2_ask.mjs) through the proxy with the
// official TypeScript SDK 1.x (@modelcontextprotocol/sdk: Client + StreamableHTTPClientTransport,
// the initialize handshake, so the 2025 era: it negotiates 2025-11-25).
//
// Usage: node tests/peers/clients/ts_talk_client.mjs URL [--source LABEL] [--scenario all|deploy]
//   URL       the proxy endpoint (http://127.0.0.1:PORT/mcp)
//   --source  the upstream's label in the proxy: each tool's real name is the `mcp_search` hit
//             (query = tool name) of that source whose name is the tool or ends with -tool/_tool/.tool;
//             every call is a plain callTool of `mcp_call` {name, arguments} (no progress token)
// Declares the capabilities elicitation {}, sampling {}, roots {}. Handlers: elicitation accepts
// "Proceed?"/"Sure?" with {ok: true}, "Name?" with {name: "ada"}, "Deploy to ..." with
// {confirm: true}; sampling answers the assistant text "sampled:<first user message text>"; roots
// are file:///work/a and file:///work/b; notifications/message records each message's data.
// Scenarios:
//   all     (py_talk.py, as py_talk_client.py's `all`) confirm -> "action=accept ok=true",
//           summarize {text: "hello"} -> "summary=sampled:hello", where -> "roots=file:///work/a
//           file:///work/b", chatty -> "logged" with the logs "step 1", "step 2" seen in that order,
//           two_questions -> "name=ada ok=true", plain -> "plain"
//   deploy  (ts2_ask.mjs) deploy {env: "prod"} -> "deployed to prod", "Deploy to prod?" asked
// Prints one line on stdout: {"ok": true, ...} (exit 0) or `FAIL: <why> <JSON>` (exit 1); 64 on bad
// usage. The whole run is bounded by 60 s.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const TOTAL_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 30_000;
const ROOTS = ['file:///work/a', 'file:///work/b'];
const ANSWERS = { 'Proceed?': { ok: true }, 'Sure?': { ok: true }, 'Name?': { name: 'ada' } };
const answerFor = (message) => (message.startsWith('Deploy to') ? { confirm: true } : (ANSWERS[message] ?? {}));
const describeError = (e) => `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`.slice(0, 1000);
const escapeRe = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function usage() {
  console.error('usage: node tests/peers/clients/ts_talk_client.mjs URL [--source LABEL] [--scenario all|deploy]');
  process.exit(64);
}

function parseArgs(argv) {
  const opts = { url: null, source: null, scenario: 'all' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--source' || a === '--scenario') {
      if (i + 1 >= argv.length) usage();
      opts[a.slice(2)] = argv[++i];
    } else if (!a.startsWith('--') && opts.url === null) opts.url = a;
    else usage();
  }
  if (!opts.url || !['all', 'deploy'].includes(opts.scenario)) usage();
  return opts;
}

class Talk {
  constructor(opts) {
    this.opts = opts;
    this.names = {};
    this.logs = [];
    this.asked = [];
    this.client = new Client(
      { name: 'mcp-search-proxy-ts-talk-client', version: '0.1.0' },
      { capabilities: { elicitation: {}, sampling: {}, roots: {} } },
    );
    this.client.setRequestHandler(ElicitRequestSchema, async (req) => {
      this.asked.push(req.params.message);
      return { action: 'accept', content: answerFor(req.params.message) };
    });
    this.client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      const first = req.params.messages.find((m) => m.role === 'user');
      const c = first?.content;
      const text = c?.type === 'text' ? c.text : JSON.stringify(c);
      return { role: 'assistant', content: { type: 'text', text: `sampled:${text}` }, model: 'talk-client', stopReason: 'endTurn' };
    });
    this.client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: ROOTS.map((uri) => ({ uri })) }));
    this.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      this.logs.push(n.params.data);
    });
    this.transport = new StreamableHTTPClientTransport(new URL(opts.url));
  }

  async connect() {
    await this.client.connect(this.transport, { timeout: REQUEST_TIMEOUT_MS });
    return { protocol_version: this.transport.protocolVersion ?? null, session: Boolean(this.transport.sessionId) };
  }

  async close() {
    await this.transport.terminateSession().catch(() => {});
    await this.client.close().catch(() => {});
  }

  callTool(name, args) {
    return this.client.callTool({ name, arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS });
  }

  async realName(tool) {
    if (!(tool in this.names)) {
      const r = await this.callTool('mcp_search', { query: tool });
      const hits = (r.structuredContent?.results ?? []).filter((h) => this.opts.source === null || h.source === this.opts.source).map((h) => h.name ?? '');
      const found = hits.filter((h) => h === tool || new RegExp(`[-_.]${escapeRe(tool)}$`).test(h));
      if (!found.length) throw new Error(`mcp_search ${JSON.stringify(tool)} has no hit ending with it: ${JSON.stringify(hits)}`);
      this.names[tool] = found[0];
    }
    return this.names[tool];
  }

  // The outcome of one mcp_call: {text, is_error} or {error}, plus ms.
  async call(tool, args = {}) {
    const t0 = Date.now();
    let out;
    try {
      const r = await this.callTool('mcp_call', { name: await this.realName(tool), arguments: args });
      const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');
      out = { text, is_error: Boolean(r.isError) };
    } catch (e) {
      out = { error: describeError(e) };
    }
    out.ms = Date.now() - t0;
    return out;
  }
}

async function scenarioAll(t, report) {
  const expected = [
    ['confirm', {}, 'action=accept ok=true'],
    ['summarize', { text: 'hello' }, 'summary=sampled:hello'],
    ['where', {}, `roots=${ROOTS.join(' ')}`],
    ['chatty', {}, 'logged'],
    ['two_questions', {}, 'name=ada ok=true'],
    ['plain', {}, 'plain'],
  ];
  const problems = [];
  for (const [tool, args, want] of expected) {
    const before = t.logs.length;
    const out = (report[tool] = await t.call(tool, args));
    if (out.text !== want || out.is_error) problems.push(`${tool}: expected ${JSON.stringify(want)}`);
    if (tool === 'chatty') {
      // A notification sent just before the result may be dispatched right after it.
      await new Promise((r) => setTimeout(r, 100));
      out.logs = t.logs.slice(before);
      const steps = out.logs.filter((x) => x === 'step 1' || x === 'step 2');
      if (JSON.stringify(steps) !== JSON.stringify(['step 1', 'step 2'])) {
        problems.push("chatty: the logging handler did not see 'step 1' then 'step 2'");
      }
    }
  }
  report.asked = t.asked;
  return problems;
}

async function scenarioDeploy(t, report) {
  const out = (report.deploy = await t.call('deploy', { env: 'prod' }));
  report.asked = t.asked;
  const problems = [];
  if (out.text !== 'deployed to prod' || out.is_error) problems.push("deploy: expected 'deployed to prod'");
  if (!t.asked.some((m) => m.startsWith('Deploy to prod'))) problems.push("the handler never saw 'Deploy to prod?'");
  return problems;
}

async function run(opts, report) {
  const t = new Talk(opts);
  try {
    Object.assign(report, await t.connect());
    const problems = await (opts.scenario === 'deploy' ? scenarioDeploy : scenarioAll)(t, report);
    report.names = t.names;
    return problems;
  } finally {
    await t.close();
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const report = { client: 'typescript @modelcontextprotocol/sdk 1.x', scenario: opts.scenario, source: opts.source };
  const t0 = Date.now();
  let timer;
  const bound = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no end within ${TOTAL_TIMEOUT_MS} ms`)), TOTAL_TIMEOUT_MS);
  });
  let problems;
  try {
    problems = await Promise.race([run(opts, report), bound]);
  } catch (e) {
    problems = [`the scenario raised ${describeError(e)}`];
  } finally {
    clearTimeout(timer);
  }
  report.ms = Date.now() - t0;
  if (problems.length) {
    console.log(`FAIL: ${problems.join('; ')} ${JSON.stringify(report)}`);
    return 1;
  }
  console.log(JSON.stringify({ ok: true, ...report }));
  return 0;
}

// Open sockets of a stuck SDK must not keep the process alive.
process.exit(await main());
