// Interop check: the official TypeScript MCP SDK client against airlock.
//
//   node client.mjs stdio <airlock binary> [args]  # spawns "<binary> serve --demo" (or the args given)
//   node client.mjs http  <url of /mcp>        # a running "airlock serve --demo --http ADDR"
//
// Prints a JSON summary on stdout and exits 0 when every check passes; on the
// first failure it prints "interop <mode>: <step>: <message>" on stderr and
// exits 1 (2 for bad usage).
//
// The SDK's Client.callTool validates structuredContent against the tool's
// outputSchema itself (client/index.js: listTools -> cacheToolMetadata
// compiles each outputSchema with AjvJsonSchemaValidator; callTool runs it
// whenever structuredContent is present, error results included). This
// script also validates every result with its own AjvJsonSchemaValidator so
// that the check does not depend on that detail, and compiles each schema
// once more with Ajv in strict mode: the SDK's Ajv runs with strict: false
// and the draft-07 vocabulary, so it silently ignores keywords it does not
// know (2020-12's prefixItems, unevaluatedProperties, ...).


import { Ajv } from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

import { CheckError, check, sdkVersion, mirrors } from './check.mjs';

const REQUIRED_TOOLS = ['describe_resources', 'search_all'];
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'];
const DEADLINE_MS = 90_000;

const [mode, target, ...serverArgs] = process.argv.slice(2);
if (!['stdio', 'http'].includes(mode) || !target) {
  process.stderr.write('usage: node client.mjs stdio <airlock binary> [serve args…] | node client.mjs http <url>\n');
  process.exit(2);
}

let step = 'start';

let serverLog = '';
function transport() {
  if (mode === 'http') return new StreamableHTTPClientTransport(new URL(target));
  const args = serverArgs.length > 0 ? serverArgs : ['serve', '--demo'];
  const t = new StdioClientTransport({ command: target, args, stderr: 'pipe' });
  // Keep the server's log for the failure message; success stays quiet.
  t.stderr?.on('data', (chunk) => {
    serverLog += chunk.toString();
  });
  return t;
}

// The SDK's own validator class with its default configuration.
const ownValidator = new AjvJsonSchemaValidator();
// Strict schema mode makes an unknown keyword a compile error instead of a
// silently skipped constraint. Types, tuples and formats are left to the
// SDK's own configuration.
const strictAjv = new Ajv({ strictSchema: true, strictTypes: false, strictTuples: false, validateFormats: false });

const validators = new Map();

function checkTool(tool) {
  check(tool.outputSchema && typeof tool.outputSchema === 'object', `tool ${tool.name} has no outputSchema`);
  check(tool.outputSchema.type === 'object', `tool ${tool.name}: outputSchema.type is ${JSON.stringify(tool.outputSchema.type)}, want "object"`);
  const ann = tool.annotations ?? {};
  for (const h of HINTS) {
    check(typeof ann[h] === 'boolean', `tool ${tool.name}: annotation ${h} is ${JSON.stringify(ann[h])}, want a boolean`);
  }
  try {
    strictAjv.compile(tool.outputSchema);
  } catch (err) {
    throw new CheckError(`tool ${tool.name}: outputSchema uses a keyword the SDK's Ajv would ignore: ${err.message}`);
  }
  validators.set(tool.name, ownValidator.getValidator(tool.outputSchema));
}

// call runs one tools/call through the SDK (which validates structuredContent
// on the way) and checks the envelope contract on the result.
async function call(name, args) {
  let res;
  try {
    res = await client.callTool({ name, arguments: args });
  } catch (err) {
    throw new CheckError(`callTool rejected the result: ${err.message}`);
  }
  check(res.structuredContent && typeof res.structuredContent === 'object', 'result has no structuredContent');
  const v = validators.get(name)(res.structuredContent);
  check(v.valid, `structuredContent does not match the outputSchema: ${v.errorMessage}`);
  const text = (res.content ?? []).find((c) => c.type === 'text');
  check(text, 'result has no text content');
  let parsed;
  try {
    parsed = JSON.parse(text.text);
  } catch (err) {
    throw new CheckError(`text content is not JSON: ${err.message}`);
  }
  check(mirrors(parsed, res.structuredContent), 'text content and structuredContent differ');
  return res;
}

const client = new Client({ name: 'airlock-interop', version: '0.0.0' }, { capabilities: {} });

async function main() {
  step = 'connect';
  await client.connect(transport());
  const server = client.getServerVersion();

  step = 'tools/list';
  const tools = [];
  let cursor;
  do {
    let page;
    try {
      page = await client.listTools(cursor ? { cursor } : {});
    } catch (err) {
      // listTools compiles every outputSchema; a schema the SDK cannot
      // compile surfaces here.
      throw new CheckError(`listTools failed (the SDK compiles each outputSchema here): ${err.message}`);
    }
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  check(tools.length > 0, 'no tools listed');
  const names = tools.map((t) => t.name);
  for (const n of REQUIRED_TOOLS) check(names.includes(n), `tool ${n} is not listed (got ${names.join(', ')})`);
  for (const t of tools) checkTool(t);

  step = 'describe_resources {}';
  const described = await call('describe_resources', {});
  check(!described.isError, `isError is set: ${JSON.stringify(described.structuredContent.problem)}`);
  const resources = (described.structuredContent.data?.resources ?? []).map((r) => r.name);
  check(resources.includes('service_accounts'), `service_accounts is not described (got ${resources.join(', ')})`);

  step = 'search_all service_accounts';
  const searched = await call('search_all', { resource: 'service_accounts', filter: { owner: null }, max_items: 5 });
  const sc = searched.structuredContent;
  check(!searched.isError, `isError is set: ${JSON.stringify(sc.problem)}`);
  check(sc.complete === false, `complete is ${JSON.stringify(sc.complete)}, want false`);
  const reasons = (sc.incomplete_reasons ?? []).map((r) => r.code);
  check(reasons.includes('VISIBILITY_RESTRICTED'), `incomplete_reasons lack VISIBILITY_RESTRICTED (got ${reasons.join(', ')})`);

  step = 'search_all bad input';
  const bad = await call('search_all', { resource: 'nope', max_items: -1 });
  const bp = bad.structuredContent.problem;
  check(bad.isError === true, `isError is ${JSON.stringify(bad.isError)}, want true`);
  check(bp?.code === 'INVALID_ARGUMENTS', `problem.code is ${JSON.stringify(bp?.code)}, want "INVALID_ARGUMENTS"`);
  const fields = (bp.errors ?? []).map((e) => e.field);
  for (const f of ['resource', 'max_items']) {
    check(fields.includes(f), `problem.errors lack field ${JSON.stringify(f)} (got ${JSON.stringify(fields)})`);
  }

  step = 'close';
  await client.close();
  return {
    ok: true,
    mode,
    sdk: sdkVersion,
    server,
    tools: names,
    search_all: { status: sc.status, complete: sc.complete, reasons },
    invalid_arguments: { code: bp.code, fields },
  };
}

const deadline = setTimeout(() => fail(new CheckError(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);

function fail(err) {
  let msg = err instanceof CheckError ? err.message : `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`;
  if (err?.cause) msg += ` (cause: ${err.cause.message ?? String(err.cause)})`;
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
    client.close().catch(() => {});
    fail(err);
  },
);
