// oidc-provider 9.13.3 as the authorization server of airlock's
// authorization suite (interop/auth_test.go starts it through
// interop/upstreams):
//
//   node oidc/provider.mjs PORT
//
// The issuer is http://127.0.0.1:PORT. Access tokens are JWTs (RFC 9068,
// RS256) whose audience is the resource indicator (RFC 8707) the client
// names; any http(s) URL is a resource, so a token for another server is as
// easy to get as one for airlock. Clients (client credentials, secret
// "<id>-secret"; sub is the client id):
//
//   reader    airlock:read
//   writer    airlock:read airlock:write
//   alice     airlock:read airlock:write   groups [dev]
//   bob       airlock:read airlock:write   groups [leads]
//   outsider  openid (no airlock scope)
//
// Public clients may register themselves (RFC 7591) and use the
// authorization code flow with PKCE; the development login form accepts
// any login (it becomes the subject) and any password.
//
// Key rotation, for the test's control:
//   POST /_test/rotate  a new signing key, published first; the old ones stay
//   POST /_test/retire  only the newest key stays published
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';

import Provider, { errors } from 'oidc-provider';

const port = Number(process.argv[2]);
if (!port) {
  process.stderr.write('usage: node oidc/provider.mjs PORT\n');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;

let generation = 0;
function newKey() {
  generation += 1;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `key-${generation}`, alg: 'RS256', use: 'sig' };
}
let keys = [newKey()];

const groups = { alice: ['dev'], bob: ['leads'] };
const clients = [
  ['reader', 'airlock:read'],
  ['writer', 'airlock:read airlock:write'],
  ['alice', 'airlock:read airlock:write'],
  ['bob', 'airlock:read airlock:write'],
  ['outsider', 'openid'],
].map(([id, scope]) => ({
  client_id: id, client_secret: `${id}-secret`, grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope,
}));

function newProvider() {
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys },
    scopes: ['openid', 'offline_access', 'airlock:read', 'airlock:write'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => oneOf ?? undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator) => {
          if (!/^https?:\/\//.test(resourceIndicator)) {
            throw new errors.InvalidTarget();
          }
          return {
            scope: 'airlock:read airlock:write',
            audience: resourceIndicator,
            accessTokenTTL: 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    extraTokenClaims: (ctx, token) => (groups[token.clientId] ? { groups: groups[token.clientId] } : undefined),
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    ttl: { ClientCredentials: 300, AccessToken: 300, AuthorizationCode: 60, Grant: 600, Interaction: 600, Session: 600 },
  });
  // Quiet: the suite reads what it needs from answers, not logs.
  provider.on('server_error', (ctx, err) => process.stderr.write(`server_error: ${err.stack}\n`));
  return provider;
}

let handle = newProvider().callback();

http
  .createServer((req, res) => {
    if (req.method === 'POST' && (req.url === '/_test/rotate' || req.url === '/_test/retire')) {
      keys = req.url === '/_test/rotate' ? [newKey(), ...keys] : [keys[0]];
      handle = newProvider().callback();
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ kids: keys.map((k) => k.kid) }));
      return;
    }
    handle(req, res);
  })
  .listen(port, '127.0.0.1', () => process.stdout.write(`oidc-provider listening on ${issuer}\n`));
