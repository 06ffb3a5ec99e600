// oidc-provider 9.13.3 as the authorization server of airlock's suites
// (started through interop/upstreams, StartOIDCProvider):
//
//   CLIENT_SECRET=... TOKEN_TTL=60 node oidc/provider.mjs PORT
//
// The issuer is http://127.0.0.1:PORT. Access tokens are JWTs (RFC 9068)
// whose audience is the resource indicator (RFC 8707) the client names.
//
// Two kinds of clients (client credentials; sub is the client id):
//
// - airlock (client_secret_basic) and airlock-post (client_secret_post),
//   with the secret CLIENT_SECRET: the outbound credential of airlock
//   towards an API. Their only resource is https://accounts.test/ (the
//   default when they name none), scopes accounts.read accounts.write,
//   ES256 tokens that live TOKEN_TTL seconds (short, so that renewal
//   happens during a scan).
// - the callers of airlock itself, secret "<id>-secret". Any http(s) URL is
//   a resource for them, so a token for another server is as easy to get as
//   one for airlock; RS256 tokens that live 300 s:
//
//     reader    airlock:read
//     writer    airlock:read airlock:write
//     operator  airlock:read airlock:write airlock:operator
//     alice     airlock:read airlock:write   groups [dev]
//     bob       airlock:read airlock:write   groups [leads]
//     outsider  openid (no airlock scope)
//
// Public clients may register themselves (RFC 7591) and use the
// authorization code flow with PKCE; the development login form accepts
// any login (it becomes the subject) and any password.
//
// For the tests' control:
//   POST /_test/rotate          a new RS256 signing key, published first; the old ones stay
//   POST /_test/retire          only the newest RS256 key stays published
//   GET  /_test/token-requests  how many token requests arrived
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';

import Provider, { errors } from 'oidc-provider';

const port = Number(process.argv[2]);
if (!port) {
  process.stderr.write('usage: node oidc/provider.mjs PORT\n');
  process.exit(2);
}
const issuer = `http://127.0.0.1:${port}`;
const accounts = 'https://accounts.test/';
const accountsScope = 'accounts.read accounts.write';
const accountsTTL = Number(process.env.TOKEN_TTL || '60');
const airlockSecret = process.env.CLIENT_SECRET || 'airlock-secret';

let generation = 0;
function newKey() {
  generation += 1;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `key-${generation}`, alg: 'RS256', use: 'sig' };
}
let keys = [newKey()];
const ecKey = (() => {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid: 'accounts-ec', alg: 'ES256', use: 'sig' };
})();

const outbound = new Set(['airlock', 'airlock-post']);
const groups = { alice: ['dev'], bob: ['leads'] };
const clients = [
  ...[
    ['reader', 'airlock:read'],
    ['writer', 'airlock:read airlock:write'],
    ['alice', 'airlock:read airlock:write'],
    ['bob', 'airlock:read airlock:write'],
    ['operator', 'airlock:read airlock:write airlock:operator'],
    ['outsider', 'openid'],
  ].map(([id, scope]) => ({
    client_id: id, client_secret: `${id}-secret`, grant_types: ['client_credentials'], response_types: [], redirect_uris: [], scope,
  })),
  ...[
    ['airlock', 'client_secret_basic'],
    ['airlock-post', 'client_secret_post'],
  ].map(([id, method]) => ({
    client_id: id, client_secret: airlockSecret, grant_types: ['client_credentials'], response_types: [], redirect_uris: [],
    token_endpoint_auth_method: method, scope: accountsScope,
  })),
];

function newProvider() {
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys: [...keys, ecKey] },
    scopes: ['openid', 'offline_access', 'airlock:read', 'airlock:write', 'airlock:operator', ...accountsScope.split(' ')],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => (client && outbound.has(client.clientId) ? accounts : oneOf ?? undefined),
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator, client) => {
          if (indicator === accounts) {
            return { scope: accountsScope, audience: accounts, accessTokenTTL: accountsTTL, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } };
          }
          if (outbound.has(client?.clientId) || !/^https?:\/\//.test(indicator)) {
            throw new errors.InvalidTarget();
          }
          return {
            scope: 'airlock:read airlock:write airlock:operator',
            audience: indicator,
            accessTokenTTL: 300,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    extraTokenClaims: (ctx, token) => (groups[token.clientId] ? { groups: groups[token.clientId] } : undefined),
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    ttl: {
      ClientCredentials: (ctx, token, client) => (outbound.has(client?.clientId) ? accountsTTL : 300),
      AccessToken: 300,
      AuthorizationCode: 60,
      Grant: 600,
      Interaction: 600,
      Session: 600,
    },
  });
  // Quiet: the suites read what they need from answers, not logs.
  provider.on('server_error', (ctx, err) => process.stderr.write(`server_error: ${err.stack}\n`));
  return provider;
}

let handle = newProvider().callback();
let tokenRequests = 0;

const json = (res, body) => {
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(body));
};

http
  .createServer((req, res) => {
    if (req.method === 'POST' && (req.url === '/_test/rotate' || req.url === '/_test/retire')) {
      keys = req.url === '/_test/rotate' ? [newKey(), ...keys] : [keys[0]];
      handle = newProvider().callback();
      json(res, { kids: keys.map((k) => k.kid) });
      return;
    }
    if (req.method === 'GET' && req.url === '/_test/token-requests') {
      json(res, { token_requests: tokenRequests });
      return;
    }
    if (req.method === 'POST' && req.url.split('?')[0] === '/token') {
      tokenRequests += 1;
    }
    handle(req, res);
  })
  .listen(port, '127.0.0.1', () => process.stdout.write(`oidc-provider listening on ${issuer}\n`));
