// Package transport is how airlock talks to one upstream: the HTTP client
// with its retries, rate limit, cooldowns and bounded concurrency, the
// credential forms (static headers, query keys, Basic, OAuth 2.0 client
// credentials, SigV4, login sessions) with their tokens, the waits a
// Retry-After asks for on an injected clock, the URLs logs may show, and
// the errors an exchange fails with, mapped to their problems.
//
// It knows nothing of resources, pagination or scans. It must never read a
// credential from anything but the configuration's env var or file, send a
// credential to another host (a redirect elsewhere is refused), retry a
// non-idempotent write that carries no idempotency key, or let a secret
// reach a log line, an error or a quoted upstream message unredacted.
package transport
