// Times the official TypeScript SDK's listTools, which compiles every
// tool's outputSchema (client/index.js: cacheToolMetadata), against the
// raw tools/list round trip, over stdio, in fresh clients and processes.
//
//   node listtools.mjs <server command> [args…]
//
// Prints one JSON line: the tools/list result's bytes, and the medians of
// seven runs in milliseconds (raw_ms, listtools_ms, compile_ms, the
// difference) and the first run's listTools (a cold process).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: node listtools.mjs <server command> [args…]\n');
  process.exit(2);
}
const runs = 7;
const raw = [];
const full = [];
let bytes = 0;
for (let i = 0; i < runs; i++) {
  const client = new Client({ name: 'airlock-listtools', version: '1' });
  await client.connect(new StdioClientTransport({ command, args, stderr: 'ignore' }));
  let t = performance.now();
  const result = await client.request({ method: 'tools/list' }, ListToolsResultSchema);
  raw.push(performance.now() - t);
  bytes = JSON.stringify(result).length;
  t = performance.now();
  await client.listTools();
  full.push(performance.now() - t);
  await client.close();
}
const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
console.log(JSON.stringify({
  bytes,
  raw_ms: median(raw),
  listtools_ms: median(full),
  compile_ms: median(full) - median(raw),
  first_listtools_ms: full[0],
}));
