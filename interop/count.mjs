// Times "how many past_due subscriptions?" through the official TypeScript
// SDK's callTool, over stdio: airlock's search_all with count "claimed"
// (the upstream's stated total, from the first page) and, when a peer is
// given, the peer's list operation (its answer states the total on page 1),
// called alternately in one process with warm clients; then airlock's
// verified count, whose total must equal the claim and the peer's.
//
//   node count.mjs <spec.json>
//
// spec: {"airlock": {"command", "args", "arguments"}, "peer": {"command",
// "args", "tool", "arguments"} or null, "runs": n, "verify_runs": m}.
// Prints one JSON line: medians and each run's times in milliseconds, the
// totals, upstream-visible answer sizes in bytes.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));

async function connect(side) {
  const client = new Client({ name: 'airlock-count', version: '1' });
  await client.connect(new StdioClientTransport({ command: side.command, args: side.args, env: process.env, stderr: 'ignore' }));
  await client.listTools(); // as a client does before calling: caches the output schemas callTool checks
  return client;
}

const text = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');

async function timed(client, name, args) {
  const t = performance.now();
  const res = await client.callTool({ name, arguments: args });
  const ms = performance.now() - t;
  if (res.isError) throw new Error(`${name}: ${text(res).slice(0, 500)}`);
  return { ms, res };
}

function airlockTotal(res) {
  const sc = res.structuredContent ?? {};
  const c = sc.coverage ?? {}, d = sc.data ?? {};
  // A claim is data's (total_relation "claimed"); coverage counts what was read.
  const t = d.total_matched !== undefined ? d : c;
  return { total: t.total_matched, relation: t.total_relation, complete: sc.complete, cursor: sc.continuation?.cursor };
}

function peerTotal(res) {
  const m = /"total"\s*:\s*(\d+)/.exec(text(res));
  return m ? Number(m[1]) : undefined;
}

const ours = await connect(spec.airlock);
const theirs = spec.peer ? await connect(spec.peer) : null;
const claimArgs = { ...spec.airlock.arguments, count: 'claimed' };
const verifyArgs = { ...spec.airlock.arguments, count: 'verified', deadline_ms: 120000 };

// One call each first, so that no run pays a first call's set-up.
await timed(ours, 'search_all', claimArgs);
if (theirs) await timed(theirs, spec.peer.tool, spec.peer.arguments);

const claimed = [];
const peer = [];
let claim, claimBytes = 0, peerAnswer, peerBytes = 0;
for (let i = 0; i < spec.runs; i++) {
  const a = await timed(ours, 'search_all', claimArgs);
  claimed.push(a.ms);
  claim = airlockTotal(a.res);
  claimBytes = text(a.res).length;
  if (claim.complete || claim.relation !== 'claimed') throw new Error(`not a claim: ${text(a.res)}`);
  if (theirs) {
    const p = await timed(theirs, spec.peer.tool, spec.peer.arguments);
    peer.push(p.ms);
    peerAnswer = peerTotal(p.res);
    peerBytes = text(p.res).length;
  }
}
const verified = [];
let proven;
for (let i = 0; i < spec.verify_runs; i++) {
  const v = await timed(ours, 'search_all', verifyArgs);
  verified.push(v.ms);
  proven = airlockTotal(v.res);
  if (!proven.complete) throw new Error(`the verified count is not complete: ${text(v.res).slice(0, 500)}`);
}
// The claim's continuation verifies it.
const followed = airlockTotal((await timed(ours, 'search_all', { ...claimArgs, cursor: claim.cursor, deadline_ms: 120000 })).res);
await ours.close();
if (theirs) await theirs.close();

const median = (a) => (a.length ? [...a].sort((x, y) => x - y)[a.length >> 1] : 0);
const round = (a) => a.map((x) => Math.round(x * 100) / 100);
console.log(JSON.stringify({
  claimed_ms: median(claimed),
  peer_ms: median(peer),
  verified_ms: median(verified),
  claimed_runs: round(claimed),
  peer_runs: round(peer),
  verified_runs: round(verified),
  claimed_total: claim.total,
  peer_total: peerAnswer ?? 0,
  verified_total: proven?.total ?? 0,
  followed_total: followed.complete ? followed.total : -1,
  claimed_bytes: claimBytes,
  peer_bytes: peerBytes,
}));
