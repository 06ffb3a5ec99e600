// Interop check: the official TypeScript MCP SDK client against airlock as an
// OAuth resource server, through the SDK's own OAuth support
// (ClientCredentialsProvider): on airlock's 401 the transport reads the
// protected-resource metadata it names, discovers the authorization server,
// gets a token with the client credentials grant for airlock's resource
// (RFC 8707) and sends the request again.
//
//   node auth.mjs <url of /mcp> <issuer>
//
// The issuer is interop/oidc/provider.mjs (clients reader and writer, secret
// "<id>-secret"). Prints a JSON summary on stdout and exits 0 when every
// check passes; on the first failure it prints "interop auth: <step>:
// <message>" on stderr and exits 1 (2 for bad usage).

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { CheckError, check, sdkVersion } from './check.mjs';

const DEADLINE_MS = 90_000;
const READ_TOOLS = ['describe_resources', 'get_operation', 'get_selection', 'search_all'];
const ALL_TOOLS = [...READ_TOOLS, 'commit_bulk_action', 'preview_selection'].sort();

const [url, issuer] = process.argv.slice(2);
if (!url || !issuer) {
  process.stderr.write('usage: node auth.mjs <url of /mcp> <issuer>\n');
  process.exit(2);
}

let step = 'start';
const clients = [];

// connect runs the SDK's OAuth flow as clientId asking for scope, and
// returns the connected client with the claims of the token it got.
async function connect(clientId, scope) {
  const provider = new ClientCredentialsProvider({ clientId, clientSecret: `${clientId}-secret`, scope, expectedIssuer: issuer });
  const client = new Client({ name: `airlock-interop-${clientId}`, version: '0.0.0' }, { capabilities: {} });
  clients.push(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  const token = provider.tokens()?.access_token;
  check(token, `${clientId}: the SDK connected without a token`);
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
  return { client, claims };
}

async function tools(client) {
  const listed = await client.listTools();
  return listed.tools.map((t) => t.name).sort();
}

async function main() {
  step = 'reader: connect (401, metadata, client credentials, retry)';
  const reader = await connect('reader', 'airlock:read');
  check(reader.claims.aud === url, `the token's audience is ${JSON.stringify(reader.claims.aud)}, want the resource ${url}`);
  check(reader.claims.iss === issuer, `the token's issuer is ${JSON.stringify(reader.claims.iss)}`);

  step = 'reader: tools/list';
  const readerTools = await tools(reader.client);
  check(JSON.stringify(readerTools) === JSON.stringify(READ_TOOLS), `airlock:read is offered ${readerTools.join(', ')}, want ${READ_TOOLS.join(', ')}`);

  step = 'reader: search_all';
  const searched = await reader.client.callTool({ name: 'search_all', arguments: { resource: 'projects', filter: { state: 'inactive' }, max_items: 0 } });
  check(!searched.isError && searched.structuredContent?.complete === true, `search_all: ${JSON.stringify(searched.structuredContent)}`);

  step = 'reader: commit_bulk_action';
  let refusal;
  try {
    await reader.client.callTool({
      name: 'commit_bulk_action',
      arguments: { selection_id: 'sel_x', expected_digest: 'sha256:x', action: { type: 'archive' }, mode: 'execute' },
    });
  } catch (err) {
    refusal = err;
  }
  // The SDK asks for a larger scope on 403 insufficient_scope (step-up);
  // the authorization server grants reader no more, and the SDK gives up.
  check(refusal, 'commit_bulk_action with airlock:read was not refused');
  check(/403/.test(String(refusal.message)), `the refusal is not a 403: ${refusal.message}`);

  step = 'writer: connect';
  const writer = await connect('writer', 'airlock:read airlock:write');
  step = 'writer: tools/list';
  const writerTools = await tools(writer.client);
  check(JSON.stringify(writerTools) === JSON.stringify(ALL_TOOLS), `airlock:write is offered ${writerTools.join(', ')}, want ${ALL_TOOLS.join(', ')}`);
  step = 'writer: preview_selection';
  const previewed = await writer.client.callTool({
    name: 'preview_selection',
    arguments: { resource: 'projects', filter: { state: 'inactive' }, action: { type: 'archive' }, page_size: 0 },
  });
  check(!previewed.isError && previewed.structuredContent?.data?.selection_id, `preview_selection: ${JSON.stringify(previewed.structuredContent)}`);

  step = 'close';
  for (const c of clients) await c.close();
  return {
    ok: true,
    sdk: sdkVersion,
    reader: { sub: reader.claims.sub, scope: reader.claims.scope, tools: readerTools, commit_refused: refusal.message },
    writer: { sub: writer.claims.sub, scope: writer.claims.scope, tools: writerTools, selection_id: previewed.structuredContent.data.selection_id },
  };
}

const deadline = setTimeout(() => fail(new CheckError(`no answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);

function fail(err) {
  let msg = err instanceof CheckError ? err.message : `${err?.name ?? 'Error'}: ${err?.message ?? String(err)}`;
  if (err?.cause) msg += ` (cause: ${err.cause.message ?? String(err.cause)})`;
  process.stderr.write(`interop auth: ${step}: ${msg}\n`);
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
    for (const c of clients) c.close().catch(() => {});
    fail(err);
  },
);
