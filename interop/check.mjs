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

// mirrors reports whether the text copy of a result mirrors its structured
// content: the text is the structured content with the members that hold
// their documented defaults left out (docs/envelope.md), so every member
// the text holds must equal the structured content's, arrays element by
// element. Where the defaults are put back is checked by the Go suite.
export function mirrors(text, structured) {
  if (Array.isArray(text)) {
    return Array.isArray(structured) && text.length === structured.length && text.every((v, i) => mirrors(v, structured[i]));
  }
  if (text !== null && typeof text === 'object') {
    if (structured === null || typeof structured !== 'object' || Array.isArray(structured)) return false;
    return Object.keys(text).every((k) => k in structured && mirrors(text[k], structured[k]));
  }
  return Object.is(text, structured) || text === structured;
}
