// Interop check: decide_selection, the approval view's app-only tool, and
// what it refuses, driven from the MCP side with the official TypeScript
// MCP SDK client over streamable HTTP.
//
//   node apps_refusals.mjs http <MCP URL>
//
// A client without the io.modelcontextprotocol/ui extension is not listed
// decide_selection, receives no view state, and its call of the tool is
// refused. A client with it: a made-up state (all the model could send: the
// state is never in the content it reads) -> ELICITATION_STATE_INVALID; another
// selection's state -> ELICITATION_STATE_INVALID; another digest ->
// DIGEST_MISMATCH; the state used once -> ELICITATION_STATE_REPLAYED. Nothing is
// decided by a refusal: the commit still needs approval.
//
// Prints a JSON summary and exits 0; on failure prints "apps_refusals:
// <step>: <message>" on stderr and exits 1.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, url] = process.argv.slice(2);
if (mode !== 'http' || !url) {
  process.stderr.write('usage: node apps_refusals.mjs http <MCP URL>\n');
  process.exit(2);
}
const UI = 'io.modelcontextprotocol/ui';
const META = 'airlock/approval';
const ACTION = { type: 'pause_collection', params: { reason: 'approved credit hold review' } };
const preview = (region) => ({ resource: 'subscriptions', filter: { status: 'past_due', region }, action: ACTION });

let step = 'start';
function check(cond, message) {
  if (!cond) throw new Error(message);
}

async function connect(name, capabilities) {
  const c = new Client({ name, version: '1' }, { capabilities });
  await c.connect(new StreamableHTTPClientTransport(new URL(url)));
  return c;
}

const summary = { ok: false, refused: {} };
const clients = [];
try {
  step = 'a client without MCP Apps';
  const plain = await connect('plain-client', {});
  clients.push(plain);
  const plainTools = (await plain.listTools()).tools.map((t) => t.name);
  check(!plainTools.includes('decide_selection'), 'decide_selection listed to a client without MCP Apps');
  check(!(await plain.listTools()).tools.some((t) => t._meta), 'tools carry _meta for a client without MCP Apps');
  const p0 = await plain.callTool({ name: 'preview_selection', arguments: preview('eu') });
  check(!p0._meta?.[META], 'a client without MCP Apps received the view state');
  let refused = false;
  try {
    const r = await plain.callTool({ name: 'decide_selection', arguments: { selection_id: p0.structuredContent.data.selection_id,
      digest: p0.structuredContent.data.digest, decision: 'approve', state: 'x', acknowledge: true } });
    refused = r.isError === true;
  } catch {
    refused = true;
  }
  check(refused, 'decide_selection answered a client without MCP Apps');
  summary.refused.without_extension = 'not listed; call refused';

  step = 'a client with MCP Apps';
  const apps = await connect('apps-client', { extensions: { [UI]: { mimeTypes: ['text/html;profile=mcp-app'] } } });
  clients.push(apps);
  const listed = (await apps.listTools()).tools.find((t) => t.name === 'decide_selection');
  check(listed?._meta?.ui?.visibility?.length === 1 && listed._meta.ui.visibility[0] === 'app', `decide_selection: ${JSON.stringify(listed?._meta)}`);
  const a = await apps.callTool({ name: 'preview_selection', arguments: preview('eu') });
  const b = await apps.callTool({ name: 'preview_selection', arguments: preview('us') });
  const stateA = a._meta?.[META]?.state, stateB = b._meta?.[META]?.state;
  check(stateA && stateB, 'no view state in the preview results');
  check(!JSON.stringify(a.content).includes(stateA) && !JSON.stringify(a.structuredContent).includes(stateA), 'the state is in what the model reads');
  const selA = a.structuredContent.data;
  const decide = async (args) => (await apps.callTool({ name: 'decide_selection', arguments: { selection_id: selA.selection_id,
    digest: selA.digest, decision: 'approve', acknowledge: true, ...args } })).structuredContent;
  const expect = async (what, args, code) => {
    step = what;
    const env = await decide(args);
    check(env.problem?.code === code && env.problem.state_changed === 'none', `want ${code}, got ${JSON.stringify(env.problem || env.data)}`);
    summary.refused[what] = code;
  };
  await expect('made_up_state', { state: 'eyJzIjoieCJ9.AAAA' }, 'ELICITATION_STATE_INVALID');
  await expect('another_selections_state', { state: stateB }, 'ELICITATION_STATE_INVALID');
  await expect('another_digest', { state: stateA, digest: b.structuredContent.data.digest }, 'DIGEST_MISMATCH');
  step = 'commit before any decision';
  const commit = await apps.callTool({ name: 'commit_bulk_action', arguments: { selection_id: selA.selection_id, expected_digest: selA.digest, action: ACTION, mode: 'execute' } });
  check(commit.structuredContent.problem?.code === 'APPROVAL_REQUIRED' && commit._meta?.[META]?.state, `commit: ${JSON.stringify(commit.structuredContent.problem)}`);
  step = 'approve';
  const ok = await decide({ state: stateA });
  check(ok.data?.decision === 'approved', `approve: ${JSON.stringify(ok.problem)}`);
  await expect('reused_state', { state: stateA }, 'ELICITATION_STATE_REPLAYED');
  summary.ok = true;
  process.stdout.write(JSON.stringify(summary) + '\n');
} catch (err) {
  process.stderr.write(`apps_refusals: ${step}: ${err?.stack || err}\n`);
  process.exitCode = 1;
} finally {
  for (const c of clients) await c.close();
}
