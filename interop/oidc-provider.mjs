// An OpenID provider (oidc-provider 9.13.3) for the authorization suite: it
// issues OAuth 2.0 client credentials tokens for one resource, as JWTs
// signed with a key made at start-up, valid for TOKEN_TTL seconds (short,
// so that renewal happens during a scan). It counts the token requests it
// receives and reports them at GET /__test/token-requests.
//
//   PORT=... CLIENT_SECRET=... RESOURCE=https://accounts.test/ TOKEN_TTL=3 node oidc-provider.mjs
import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const ttl = Number(process.env.TOKEN_TTL || '60');
const resource = process.env.RESOURCE;
const secret = process.env.CLIENT_SECRET;
const scope = 'accounts.read accounts.write';

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'interop-1', alg: 'ES256', use: 'sig' };

const client = (id, method) => ({
  client_id: id,
  client_secret: secret,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: method,
  id_token_signed_response_alg: 'ES256',
  scope,
});

const provider = new Provider(issuer, {
  clients: [client('airlock', 'client_secret_basic'), client('airlock-post', 'client_secret_post')],
  jwks: { keys: [jwk] },
  scopes: scope.split(' '),
  features: {
    clientCredentials: { enabled: true },
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => resource,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, indicator) => {
        if (indicator !== resource) {
          throw new errors.InvalidTarget();
        }
        return { scope, audience: resource, accessTokenTTL: ttl, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'ES256' } } };
      },
    },
  },
  ttl: { ClientCredentials: ttl },
});

let tokenRequests = 0;
provider.use(async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path === '/__test/token-requests') {
    ctx.body = { token_requests: tokenRequests };
    return;
  }
  if (ctx.method === 'POST' && ctx.path === '/token') {
    tokenRequests += 1;
  }
  await next();
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
