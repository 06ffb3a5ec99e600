// Interop check: ids beyond 2^53 through the official TypeScript MCP SDK
// client, over stdio, against airlock serving the Snowflakes API
// (fixtures.Snowflakes: ids and team_ids that are JSON integers beyond
// 2^53, beside the neighbours a double confuses them with).
//
//   node bigids.mjs stdio <airlock binary> serve --config FILE --store FILE
//
// The script is an agent: it searches, picks four records by name (flake-1,
// flake-3, flake-5, flake-11), and sends their ids, as the SDK handed them
// (as the string the tools ask for: String(id)), to search_all's filter, to
// preview_selection as explicit ids, and commits the preview. It checks
// that the answers hold no number a double rounds and that each step names
// exactly the picked records, going on to the commit whatever it saw, as an
// agent would; the Go test checks that the upstream saw writes to exactly
// their ids.
//
// Prints a JSON summary on stdout (the ids it was handed and sent) and
// exits 0 when every check passes; on the first failure it prints
// "interop <mode>: <step>: <message>" and the server's log on stderr, and
// exits 1 (2 for bad usage).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { CheckError, check, sdkVersion, mirrors } from './check.mjs';

const DEADLINE_MS = 90_000;
const RESOURCE = 'snowflakes';
const ACTION = { type: 'archive' };
const PICKED = ['flake-1', 'flake-3', 'flake-5', 'flake-11'];

const [mode, target, ...serverArgs] = process.argv.slice(2);
if (mode !== 'stdio' || !target || serverArgs.length === 0) {
  process.stderr.write('usage: node bigids.mjs stdio <airlock binary> serve --config FILE --store FILE\n');
  process.exit(2);
}

let step = 'start';
let serverLog = '';
let client = null;

// Checks of what the agent was shown are collected, not thrown, so that
// the agent goes on as it would and the Go test sees where its writes
// went; the script fails at the end when any was broken.
const broken = [];
function expect(cond, message) {
  if (!cond) broken.push(`${step}: ${message}`);
}

// rounded lists the numbers of v that are not safe integers and not
// ordinary fractions: what a double may have rounded on the way in.
function rounded(v, path = '', out = []) {
  if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) out.push(`${path}=${v}`);
  else if (Array.isArray(v)) v.forEach((e, i) => rounded(e, `${path}[${i}]`, out));
  else if (v !== null && typeof v === 'object') for (const [k, e] of Object.entries(v)) rounded(e, path ? `${path}.${k}` : k, out);
  return out;
}

// call runs one tools/call through the SDK, which validates
// structuredContent against the tool's outputSchema, and checks that the
// text copy mirrors it and that neither holds a number beyond 2^53.
async function call(name, args) {
  let res;
  try {
    res = await client.callTool({ name, arguments: args });
  } catch (err) {
    throw new CheckError(`${name}: callTool failed: ${err.message}`);
  }
  const sc = res.structuredContent;
  check(sc && typeof sc === 'object', `${name}: result has no structuredContent`);
  const text = (res.content ?? []).find((c) => c.type === 'text');
  check(text, `${name}: result has no text content`);
  const parsed = JSON.parse(text.text);
  check(mirrors(parsed, sc), `${name}: text content and structuredContent differ`);
  for (const [copy, doc] of [['structuredContent', sc], ['text content', parsed]]) {
    const r = rounded(doc);
    expect(r.length === 0, `${name}: the ${copy} holds ${r.length} integer(s) beyond 2^53−1, which this client holds rounded: ${r.slice(0, 4).join(', ')}`);
  }
  check(!res.isError && !sc.problem, `${name}: isError is set: ${JSON.stringify(sc.problem)}`);
  return sc;
}

async function main() {
  step = 'connect';
  const transport = new StdioClientTransport({ command: target, args: serverArgs, stderr: 'pipe' });
  transport.stderr?.on('data', (chunk) => {
    serverLog += chunk.toString();
  });
  client = new Client({ name: 'airlock-interop-bigids', version: '0.0.0' }, { capabilities: {} });
  await client.connect(transport);
  // Listing caches the output schemas, which callTool validates against.
  await client.listTools();

  step = 'search_all';
  const all = await call('search_all', { resource: RESOURCE, fields: ['id', 'name', 'team_id'] });
  check(all.complete === true, `search_all is not complete: ${JSON.stringify(all.incomplete_reasons)}`);
  const byName = new Map(all.data.items.map((it) => [it.name, it]));
  const handed = PICKED.map((name) => byName.get(name)?.id);
  check(handed.every((id) => id !== undefined), `search_all lists no ${PICKED.filter((n) => !byName.has(n)).join(', ')}`);
  // The agent sends each id as the tools ask for one: a string.
  const sent = handed.map((id) => String(id));

  step = 'search_all by id';
  for (const id of sent) {
    const one = await call('search_all', { resource: RESOURCE, fields: ['id', 'name'], filter: { id } });
    const names = one.data.items.map((it) => it.name);
    const want = PICKED[sent.indexOf(id)];
    expect(one.complete === true && names.length === 1 && names[0] === want,
      `search_all with id ${id}: complete ${one.complete}, records ${JSON.stringify(names)}; want exactly ${want}`);
  }

  step = 'preview_selection';
  const sel = (await call('preview_selection', { resource: RESOURCE, ids: sent, action: ACTION, fields: ['id', 'name'] })).data;
  check(sel.committable === true, `the selection is not committable: ${JSON.stringify(sel.committable_reasons)}`);
  check(sel.counts.members === sent.length, `the selection has ${sel.counts.members} members, want ${sent.length}: ${JSON.stringify(sel.counts)}`);
  const manifest = sel.manifest.items.map((r) => ({ id: r.id, name: r.fields.name, field: String(r.fields.id) }));
  for (const m of manifest) {
    const i = sent.indexOf(m.id);
    expect(i >= 0 && m.name === PICKED[i] && m.field === m.id, `the manifest holds ${JSON.stringify(m)}, which is not a record the agent picked`);
  }

  step = 'commit_bulk_action';
  let op = (await call('commit_bulk_action', { selection_id: sel.selection_id, expected_digest: sel.digest, action: ACTION, mode: 'execute' })).data;
  step = 'get_operation';
  for (let polls = 0; op.status === 'running'; polls++) {
    check(polls < 100, `operation ${op.operation_id} still running after ${polls} polls`);
    await new Promise((r) => setTimeout(r, 200));
    op = (await call('get_operation', { operation_id: op.operation_id })).data;
  }
  check(op.status === 'completed' && op.counts.succeeded === sent.length,
    `operation ${op.operation_id} finished ${JSON.stringify(op.status)} with counts ${JSON.stringify(op.counts)}, want ${sent.length} succeeded`);
  const journaled = op.results.map((r) => r.id).sort();
  check(JSON.stringify(journaled) === JSON.stringify([...sent].sort()), `the journal names ${JSON.stringify(journaled)}, want ${JSON.stringify([...sent].sort())}`);

  step = 'close';
  await client.close();
  if (broken.length > 0) {
    step = 'what the agent was shown';
    throw new CheckError(`${broken.length} check(s) broke (sent ${JSON.stringify(sent)}):\n  ${broken.join('\n  ')}`);
  }
  return { ok: true, mode, sdk: sdkVersion, handed, sent, journaled };
}

const deadline = setTimeout(() => fail(new CheckError(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);

function fail(err) {
  const msg = err instanceof CheckError ? err.message : `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`;
  process.stderr.write(`interop ${mode}: ${step}: ${msg}\n`);
  if (serverLog) process.stderr.write(`--- airlock stderr ---\n${serverLog}`);
  process.exit(1);
}

main().then(
  (summary) => {
    clearTimeout(deadline);
    process.stdout.write(JSON.stringify(summary) + '\n');
    process.exit(0);
  },
  (err) => {
    clearTimeout(deadline);
    client?.close().catch(() => {});
    fail(err);
  },
);
