// Counts the o200k tokens of files, as a GPT-4o-class model reads them:
// the figure docs/benchmarks.md gives for an answer's text (bytes/4, which
// the Go benchmarks report, undercounts JSON: 74 for 87).
//
//	BENCH_EMPTY_OUT=/tmp/empty.txt go test -run '^$' -bench EmptyAnswer -benchtime 1x ./mcpserver
//	(cd scripts/tokens && npm ci && node count.mjs /tmp/empty.txt)
import { readFileSync } from "node:fs";
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";

const enc = new Tiktoken(o200k);
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file, "utf8");
  console.log(`${file}\t${enc.encode(text).length} tokens\t${Buffer.byteLength(text)} bytes`);
}
