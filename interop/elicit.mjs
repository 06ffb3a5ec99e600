// Interop check: approval through MCP elicitation, with the official
// TypeScript MCP SDK client against airlock over stdio.
//
//   node elicit.mjs stdio <airlock binary> [serve args…]
//
// Each phase spawns its own server, so that each starts from fresh demo data
// (the demo API is regenerated in memory per process). When the serve args
// hold "--store PATH", phase P uses DIR/P-BASE instead (a fresh store per
// phase); without serve args, "serve --demo --store <temp dir>/P.db".
//
//   without_elicitation  a client that did not declare the elicitation
//                        capability: commit -> CLIENT_APPROVAL_UNAVAILABLE,
//                        nothing written, no elicitation sent.
//   with_elicitation     a client that declared it answers successive commits
//                        of one selection: decline -> APPROVAL_DECLINED,
//                        cancel -> APPROVAL_CANCELLED, accept without
//                        approve -> APPROVAL_DECLINED (nothing written after
//                        each), accept with approve and acknowledge -> the
//                        operation runs on exactly the previewed targets;
//                        committing again returns the same operation without
//                        asking again.
//
// Prints a JSON summary on stdout and exits 0 when every check passes; on the
// first failure it prints "interop <mode>: <step>: <message>" on stderr,
// then the JSON-RPC messages exchanged with the server of the failing phase
// and the server's log, and exits 1 (2 for bad usage).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { CheckError, check, sdkVersion, mirrors } from './check.mjs';

const DEADLINE_MS = 90_000;
const RESOURCE = 'subscriptions';
const FILTER = { status: 'past_due', region: 'eu' };
const EXCLUDE = [{ field: 'tags', op: 'contains', value: 'disputed', reason: 'disputed invoices stay' }];
const ACTION = { type: 'pause_collection', params: { reason: 'approved credit hold review' } };

const [mode, target, ...serverArgs] = process.argv.slice(2);
if (mode !== 'stdio' || !target) {
  process.stderr.write('usage: node elicit.mjs stdio <airlock binary> [serve args…]\n');
  process.exit(2);
}

let step = 'start';

// The phase that runs now: its server log and JSON-RPC trace are shown on
// failure.
let current = null;
let tempDir = null;

function phaseArgs(phase) {
  if (serverArgs.length === 0) {
    tempDir ??= mkdtempSync(join(tmpdir(), 'airlock-elicit-'));
    return ['serve', '--demo', '--store', join(tempDir, `${phase}.db`)];
  }
  const args = [...serverArgs];
  const i = args.indexOf('--store');
  if (i >= 0 && i + 1 < args.length) {
    args[i + 1] = join(dirname(args[i + 1]), `${phase}-${basename(args[i + 1])}`);
  }
  return args;
}

// connect starts a server for the phase and connects a client to it; the
// client declares elicitation only when onElicit is given.
async function connect(phase, onElicit) {
  const state = { phase, serverLog: '', trace: [], client: null };
  current = state;
  const transport = new StdioClientTransport({ command: target, args: phaseArgs(phase), stderr: 'pipe' });
  transport.stderr?.on('data', (chunk) => {
    state.serverLog += chunk.toString();
  });
  const capabilities = onElicit ? { elicitation: { form: {} } } : {};
  const client = new Client({ name: `airlock-interop-${phase}`, version: '0.0.0' }, { capabilities });
  state.client = client;
  if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
  await client.connect(transport);
  // Record every JSON-RPC message both ways (connect has installed
  // onmessage by now; initialize is not recorded).
  const onmessage = transport.onmessage;
  transport.onmessage = (msg, extra) => {
    state.trace.push({ dir: 'server->client', msg });
    onmessage?.(msg, extra);
  };
  const send = transport.send.bind(transport);
  transport.send = (msg, options) => {
    state.trace.push({ dir: 'client->server', msg });
    return send(msg, options);
  };
  return client;
}

// elicitationsIn counts the elicitation/create requests the server sent in
// this phase, whatever the client did with them.
function elicitationsIn(state) {
  return state.trace.filter((t) => t.dir === 'server->client' && t.msg.method === 'elicitation/create').length;
}

// call runs one tools/call through the SDK (which validates structuredContent
// against the tool's outputSchema) and checks that the text content mirrors
// structuredContent.
async function call(client, name, args) {
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
  let parsed;
  try {
    parsed = JSON.parse(text.text);
  } catch (err) {
    throw new CheckError(`${name}: text content is not JSON: ${err.message}`);
  }
  check(mirrors(parsed, sc), `${name}: text content and structuredContent differ`);
  return res;
}

async function ok(client, name, args) {
  const res = await call(client, name, args);
  check(!res.isError && !res.structuredContent.problem, `${name}: isError is set: ${JSON.stringify(res.structuredContent.problem)}`);
  return res.structuredContent;
}

// refused expects an error envelope with problem.code want and
// state_changed none, and no operation.
async function refused(client, name, args, want) {
  const res = await call(client, name, args);
  const sc = res.structuredContent;
  const p = sc.problem;
  check(res.isError === true, `${name}: isError is ${JSON.stringify(res.isError)}, want true (problem ${JSON.stringify(p)}, data ${JSON.stringify(sc.data)})`);
  check(p?.code === want, `${name}: problem.code is ${JSON.stringify(p?.code)}, want ${JSON.stringify(want)} (problem ${JSON.stringify(p)})`);
  check(p.state_changed === 'none', `${name}: problem.state_changed is ${JSON.stringify(p.state_changed)}, want "none"`);
  check(sc.data?.operation_id === undefined, `${name}: a refused commit names operation ${JSON.stringify(sc.data?.operation_id)}`);
  return p.code;
}

// searchPaused pages through search_all and returns id -> collection_paused
// of every match.
async function searchPaused(client, filter) {
  const out = new Map();
  let cursor;
  for (let page = 0; ; page++) {
    check(page < 200, `search_all ${JSON.stringify(filter)}: more than 200 pages`);
    const args = { resource: RESOURCE, filter, fields: ['id', 'collection_paused'] };
    if (cursor) args.cursor = cursor;
    const sc = await ok(client, 'search_all', args);
    for (const item of sc.data.items) {
      check(typeof item.collection_paused === 'boolean', `search_all: item ${item.id} has collection_paused ${JSON.stringify(item.collection_paused)}`);
      out.set(item.id, item.collection_paused);
    }
    if (sc.complete) break;
    cursor = sc.continuation?.cursor;
    check(cursor, `search_all ${JSON.stringify(filter)}: incomplete (${JSON.stringify(sc.incomplete_reasons)}) without a cursor`);
  }
  return out;
}

// pausedIds returns the ids of every subscription with collection paused.
async function pausedIds(client) {
  return [...(await searchPaused(client, { collection_paused: true })).keys()].sort();
}

async function preview(client) {
  const d = (await ok(client, 'preview_selection', { resource: RESOURCE, filter: FILTER, exclude: EXCLUDE, action: ACTION, page_size: 0 })).data;
  check(d.committable === true, `selection is not committable: ${JSON.stringify(d.committable_reasons)}`);
  check(d.counts.members > 0, `selection has no members: ${JSON.stringify(d.counts)}`);
  check(d.approval?.mode === 'client', `data.approval is ${JSON.stringify(d.approval)}, want mode "client"`);
  check(Array.isArray(d.approval.reasons) && d.approval.reasons.length > 0, `data.approval has no reasons: ${JSON.stringify(d.approval)}`);
  return d;
}

// memberIds pages through the frozen manifest of the selection.
async function memberIds(client, sel) {
  const ids = [];
  let cursor;
  for (let page = 0; ; page++) {
    check(page < 100, 'get_selection: more than 100 pages');
    const args = { selection_id: sel.selection_id, page_size: 500 };
    if (cursor) args.cursor = cursor;
    const sc = await ok(client, 'get_selection', args);
    check(sc.data.digest === sel.digest, `get_selection: digest ${sc.data.digest}, want ${sel.digest}`);
    ids.push(...sc.data.items.map((it) => it.id));
    if (sc.complete) break;
    cursor = sc.continuation?.cursor;
    check(cursor, 'get_selection: incomplete without a cursor');
  }
  check(ids.length === sel.counts.members, `get_selection lists ${ids.length} members, preview counted ${sel.counts.members}`);
  return ids.sort();
}

function commitArgs(sel) {
  return { selection_id: sel.selection_id, expected_digest: sel.digest, action: ACTION, mode: 'execute' };
}

async function unchanged(client, before, what) {
  const after = await pausedIds(client);
  check(isDeepStrictEqual(after, before),
    `${what}: the paused subscriptions changed (${before.length} before, ${after.length} after: newly paused ${JSON.stringify(after.filter((id) => !before.includes(id)).slice(0, 5))})`);
}

async function withoutElicitation() {
  step = 'without_elicitation: connect';
  const client = await connect('without_elicitation', null);
  const state = current;
  step = 'without_elicitation: search_all before';
  const before = await pausedIds(client);
  step = 'without_elicitation: preview_selection';
  const sel = await preview(client);
  const members = await memberIds(client, sel);
  check(members.every((id) => !before.includes(id)), 'a previewed target is already paused');
  step = 'without_elicitation: commit_bulk_action';
  const code = await refused(client, 'commit_bulk_action', commitArgs(sel), 'CLIENT_APPROVAL_UNAVAILABLE');
  check(elicitationsIn(state) === 0, `the server sent ${elicitationsIn(state)} elicitation/create request(s) to a client without the capability`);
  step = 'without_elicitation: search_all after';
  await unchanged(client, before, 'after CLIENT_APPROVAL_UNAVAILABLE');
  step = 'without_elicitation: close';
  await client.close();
  return { members: sel.counts.members, problem: code };
}

async function withElicitation() {
  // answers[i] is the answer to the i-th elicitation; asked records what the
  // handler received.
  const answers = [
    { action: 'decline' },
    { action: 'cancel' },
    { action: 'accept', content: { approve: false, acknowledge: true } },
    { action: 'accept', content: { approve: true, acknowledge: true } },
  ];
  const asked = [];
  const onElicit = async (request) => {
    asked.push(request.params);
    const answer = answers[asked.length - 1];
    if (!answer) throw new Error(`unexpected elicitation #${asked.length}`);
    return answer;
  };

  step = 'with_elicitation: connect';
  const client = await connect('with_elicitation', onElicit);
  const state = current;
  step = 'with_elicitation: search_all before';
  const before = await pausedIds(client);
  step = 'with_elicitation: preview_selection';
  const sel = await preview(client);
  const members = await memberIds(client, sel);
  check(members.every((id) => !before.includes(id)), 'a previewed target is already paused');

  // checkAsked checks the elicitation the handler received for commit n.
  const checkAsked = (n) => {
    check(asked.length === n, `the client was asked ${asked.length} time(s), want ${n}`);
    check(elicitationsIn(state) === n, `the server sent ${elicitationsIn(state)} elicitation/create request(s), want ${n}`);
    const p = asked[n - 1];
    check((p.mode ?? 'form') === 'form', `elicitation mode is ${JSON.stringify(p.mode)}, want form`);
    const msg = p.message ?? '';
    check(msg.includes(ACTION.type), `elicitation message does not name ${ACTION.type}: ${JSON.stringify(msg)}`);
    check(new RegExp(`\\b${sel.counts.members}\\b`).test(msg), `elicitation message does not name the ${sel.counts.members} members: ${JSON.stringify(msg)}`);
    check(msg.includes(sel.digest), `elicitation message does not name the digest ${sel.digest}: ${JSON.stringify(msg)}`);
    check(msg.includes(sel.selection_id), `elicitation message does not name the selection ${sel.selection_id}: ${JSON.stringify(msg)}`);
    const rs = p.requestedSchema ?? {};
    check(rs.properties?.approve?.type === 'boolean', `requestedSchema has no boolean approve: ${JSON.stringify(rs)}`);
    check((rs.required ?? []).includes('approve'), `requestedSchema does not require approve: ${JSON.stringify(rs)}`);
    if (rs.properties?.acknowledge) {
      check(rs.properties.acknowledge.type === 'boolean', `acknowledge is not a boolean: ${JSON.stringify(rs)}`);
      check((rs.required ?? []).includes('acknowledge'), `requestedSchema does not require acknowledge: ${JSON.stringify(rs)}`);
    }
  };

  const problems = [];
  const refusals = [
    ['decline', 'APPROVAL_DECLINED'],
    ['cancel', 'APPROVAL_CANCELLED'],
    ['accept without approve', 'APPROVAL_DECLINED'],
  ];
  for (const [i, [answer, want]] of refusals.entries()) {
    step = `with_elicitation: commit_bulk_action, the user answers ${answer}`;
    problems.push(await refused(client, 'commit_bulk_action', commitArgs(sel), want));
    checkAsked(i + 1);
    step = `with_elicitation: search_all after ${answer}`;
    await unchanged(client, before, `after ${want}`);
  }

  step = 'with_elicitation: commit_bulk_action, the user approves';
  let op = (await ok(client, 'commit_bulk_action', commitArgs(sel))).data;
  checkAsked(refusals.length + 1);
  const opId = op.operation_id;
  check(typeof opId === 'string' && opId !== '', `commit answered no operation_id: ${JSON.stringify(op)}`);
  check(op.selection_id === sel.selection_id && op.digest === sel.digest, `the operation is for ${op.selection_id} ${op.digest}, want ${sel.selection_id} ${sel.digest}`);
  check(op.replayed === false, `the first operation says replayed ${JSON.stringify(op.replayed)}`);
  check(typeof op.approval_id === 'string' && op.approval_id !== '', `the operation names no approval_id: ${JSON.stringify(op.approval_id)}`);

  step = 'with_elicitation: get_operation';
  for (let polls = 0; op.status === 'running'; polls++) {
    check(polls < 100, `operation ${opId} still running after ${polls} polls`);
    await new Promise((r) => setTimeout(r, 200));
    op = (await ok(client, 'get_operation', { operation_id: opId })).data;
  }
  check(op.status === 'completed', `operation ${opId} finished ${JSON.stringify(op.status)} (stop_reason ${JSON.stringify(op.stop_reason)}), want "completed"; counts ${JSON.stringify(op.counts)}`);
  const n = sel.counts.members;
  check(op.total === n, `operation total is ${op.total}, want ${n}`);
  const nonzero = Object.fromEntries(Object.entries(op.counts).filter(([, v]) => v !== 0));
  check(isDeepStrictEqual(nonzero, { succeeded: n }), `operation counts are ${JSON.stringify(op.counts)}, want {"succeeded":${n}}`);

  step = 'with_elicitation: search_all after approval';
  const after = await pausedIds(client);
  const want = [...new Set([...before, ...members])].sort();
  const extra = after.filter((id) => !want.includes(id));
  const missing = want.filter((id) => !after.includes(id));
  check(extra.length === 0 && missing.length === 0,
    `paused subscriptions are not exactly the earlier ones plus the ${n} targets: unexpected ${JSON.stringify(extra.slice(0, 5))} (${extra.length}), not paused ${JSON.stringify(missing.slice(0, 5))} (${missing.length})`);
  const scope = await searchPaused(client, FILTER);
  for (const id of members) check(scope.get(id) === true, `target ${id}: collection_paused is ${scope.get(id)}, want true`);

  step = 'with_elicitation: commit_bulk_action again';
  const again = (await ok(client, 'commit_bulk_action', commitArgs(sel))).data;
  check(again.operation_id === opId, `committing again answered operation ${JSON.stringify(again.operation_id)}, want ${opId}`);
  check(again.replayed === true, `committing again says replayed ${JSON.stringify(again.replayed)}, want true`);
  check(asked.length === refusals.length + 1 && elicitationsIn(state) === refusals.length + 1,
    `committing again asked the user again (${asked.length} elicitation(s) handled, ${elicitationsIn(state)} sent)`);
  const pausedAgain = await pausedIds(client);
  check(isDeepStrictEqual(pausedAgain, after), 'committing again changed the paused subscriptions');

  step = 'with_elicitation: close';
  await client.close();
  return {
    members: n,
    problems,
    elicitations: asked.length,
    answers: answers.map((a) => a.action + (a.content ? ` ${JSON.stringify(a.content)}` : '')),
    operation: { status: op.status, counts: op.counts, total: op.total, replayed_on_recommit: again.replayed },
    paused: { before: before.length, after: after.length },
  };
}

async function main() {
  const without = await withoutElicitation();
  const withE = await withElicitation();
  return { ok: true, mode, sdk: sdkVersion, without_elicitation: without, with_elicitation: withE };
}

function cleanup() {
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
}

const deadline = setTimeout(() => fail(new CheckError(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);

function fail(err) {
  let msg = err instanceof CheckError ? err.message : `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`;
  if (err?.cause) msg += ` (cause: ${err.cause.message ?? String(err.cause)})`;
  process.stderr.write(`interop ${mode}: ${step}: ${msg}\n`);
  if (current) {
    if (current.trace.length > 0) {
      process.stderr.write(`--- JSON-RPC after initialize (${current.phase}) ---\n`);
      for (const t of current.trace.slice(-40)) {
        let s = JSON.stringify(t.msg);
        if (s.length > 4000) s = s.slice(0, 4000) + '…';
        process.stderr.write(`${t.dir}: ${s}\n`);
      }
    }
    if (current.serverLog) process.stderr.write(`--- airlock stderr (${current.phase}) ---\n${current.serverLog}`);
  }
  cleanup();
  process.exit(1);
}

main().then(
  (summary) => {
    clearTimeout(deadline);
    cleanup();
    process.stdout.write(JSON.stringify(summary) + '\n');
    process.exit(0);
  },
  (err) => {
    clearTimeout(deadline);
    current?.client?.close().catch(() => {});
    fail(err);
  },
);
