// What the interop scripts share: the SDK version under test and the
// failure of a check (reported as a message, not a stack trace).

import { readFileSync } from 'node:fs';

export const sdkVersion = JSON.parse(
  readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url), 'utf8'),
).version;

export class CheckError extends Error {}

export function check(cond, message) {
  if (!cond) throw new CheckError(message);
}
