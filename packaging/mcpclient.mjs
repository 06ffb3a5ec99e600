// An MCP host's first minute, with the official TypeScript SDK client:
// start a server the way a host's configuration says (command, args, env;
// the SDK adds HOME, PATH and the like from this process, as hosts do),
// list its tools and call one.
//
//   node mcpclient.mjs '{"command": "...", "args": [...], "env": {...},
//                        "call": {"name": "search_all", "arguments": {...}}}'
//
// Prints {"ok": true, "server": {...}, "tools": [names], "answer": {...},
// "first_answer_ms": N} on stdout (answer: the call's structuredContent,
// when a call was asked; first_answer_ms: from starting the server to its
// last answer),
// or "mcpclient: <step>: <message>" and the server's stderr on stderr and
// exits 1. The SDK comes from interop/node_modules (npm ci in interop/), or
// from the directory AIRLOCK_MCP_SDK names.

const sdkDir = process.env.AIRLOCK_MCP_SDK
  ? new URL(`file://${process.env.AIRLOCK_MCP_SDK.replace(/\/?$/, '/')}`)
  : new URL('../interop/node_modules/@modelcontextprotocol/sdk/', import.meta.url);
const { Client } = await import(new URL('dist/esm/client/index.js', sdkDir));
const { StdioClientTransport } = await import(new URL('dist/esm/client/stdio.js', sdkDir));

const DEADLINE_MS = 60_000;

let step = 'arguments';
let serverLog = '';
try {
  const spec = JSON.parse(process.argv[2] ?? '');
  if (typeof spec.command !== 'string' || !Array.isArray(spec.args)) {
    throw new Error('want {"command": "...", "args": [...]}');
  }
  const transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args,
    env: spec.env,
    cwd: spec.cwd,
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk) => {
    serverLog += chunk.toString();
  });
  const client = new Client({ name: 'airlock-packaging-check', version: '1.0.0' });
  const deadline = setTimeout(() => {
    process.stderr.write(`mcpclient: ${step}: no answer within ${DEADLINE_MS} ms\n${serverLog}`);
    process.exit(1);
  }, DEADLINE_MS);

  step = 'connect';
  const started = performance.now();
  await client.connect(transport);
  const server = client.getServerVersion();

  step = 'tools/list';
  const { tools } = await client.listTools();

  let answer;
  if (spec.call) {
    step = `tools/call ${spec.call.name}`;
    const res = await client.callTool({ name: spec.call.name, arguments: spec.call.arguments ?? {} });
    if (res.isError) {
      throw new Error(`the tool answered an error: ${JSON.stringify(res.structuredContent ?? res.content)}`);
    }
    answer = res.structuredContent;
  }
  const firstAnswerMs = Math.round(performance.now() - started);

  step = 'close';
  await client.close();
  clearTimeout(deadline);
  process.stdout.write(`${JSON.stringify({ ok: true, server, tools: tools.map((t) => t.name), answer, first_answer_ms: firstAnswerMs })}\n`);
} catch (err) {
  process.stderr.write(`mcpclient: ${step}: ${err?.stack ?? err}\n--- server stderr ---\n${serverLog}`);
  process.exit(1);
}
