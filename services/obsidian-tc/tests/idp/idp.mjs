// A real OpenID Connect identity provider for the integration tests, built on
// the npm package oidc-provider (installed by `scripts/mcp-clients install`,
// found through $OTC_TEST_IDP_MODULES). It plays a tenant's enterprise IdP.
//
//   $OTC_TEST_NODE_BIN/node services/obsidian-tc/tests/idp/idp.mjs CONFIG_JSON
//
// CONFIG_JSON:
//   { "port": 0,
//     "clients": [ {"client_id", "client_secret", "redirect_uris": [...]} ],
//     "users":   [ {"sub", "login", "password", "email", "name", "groups": [...]} ],
//     "exit_on_stdin_close": true }            // optional, default true
//
// Listens on 127.0.0.1; when ready prints one line to stdout,
// {"issuer":"http://127.0.0.1:PORT"}, then serves until killed or until stdin
// closes. Everything else (oidc-provider notices included) goes to stderr.
//
// Endpoints: the provider's own (/.well-known/openid-configuration, /jwks,
// /auth, /token, /me, ...), the login interaction (GET /interaction/:uid,
// POST /interaction/:uid/login with fields login and password; consent is
// granted automatically), the ID-JAG token exchange at /token
// (draft-ietf-oauth-identity-assertion-authz-grant) and the test helper
// POST /test/id-jag.

import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

// oidc-provider's notices use console.info (stdout); stdout carries only the
// ready line, so route all console output to stderr.
console.log = console.error;
console.info = console.error;
console.debug = console.error;

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_JAG_TYPE = 'urn:ietf:params:oauth:token-type:id-jag';
const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG_TTL = 300;

function fail(message, cause) {
  console.error(`idp: ${message}`, cause ?? '');
  process.exit(1);
}

async function loadOidcProvider() {
  const modules = process.env.OTC_TEST_IDP_MODULES;
  if (!modules) fail('OTC_TEST_IDP_MODULES is not set (see scripts/mcp-clients env)');
  const require = createRequire(path.join(path.resolve(modules), 'noop.js'));
  let entry;
  try {
    entry = require.resolve('oidc-provider');
  } catch (err) {
    fail(`oidc-provider not found under ${modules} (run scripts/mcp-clients install)`, err);
  }
  return import(pathToFileURL(entry).href);
}

function parseConfig() {
  const raw = process.argv[2];
  if (!raw) fail('usage: idp.mjs CONFIG_JSON');
  let config;
  try {
    config = JSON.parse(raw);
  } catch (err) {
    fail('CONFIG_JSON is not valid JSON', err);
  }
  if (!config || typeof config !== 'object') fail('CONFIG_JSON must be an object');
  const port = Number.isInteger(config.port) && config.port >= 0 ? config.port : 0;
  const clients = (Array.isArray(config.clients) ? config.clients : []).map((c) => ({
    client_id: String(c.client_id),
    client_secret: String(c.client_secret),
    redirect_uris: Array.isArray(c.redirect_uris) ? c.redirect_uris.map(String) : [],
  }));
  const users = (Array.isArray(config.users) ? config.users : []).map((u) => ({
    sub: String(u.sub),
    login: String(u.login ?? u.sub),
    password: String(u.password ?? ''),
    email: u.email === undefined ? undefined : String(u.email),
    name: u.name === undefined ? undefined : String(u.name),
    groups: Array.isArray(u.groups) ? u.groups.map(String) : [],
  }));
  return { port, clients, users, exitOnStdinClose: config.exit_on_stdin_close !== false };
}

// --- small helpers -----------------------------------------------------------

const b64url = (buf) => Buffer.from(buf).toString('base64url');

function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({
    '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
  }[c]));
}

async function readBody(req, limit = 64 * 1024) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > limit) throw new Error('request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function send(res, status, contentType, body, headers = {}) {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(body),
    ...headers,
  });
  res.end(body);
}

const sendJson = (res, status, obj) => send(res, status, 'application/json', JSON.stringify(obj));

// --- keys ----------------------------------------------------------------------

const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const publicJwk = publicKey.export({ format: 'jwk' });
const KID = b64url(crypto.createHash('sha256')
  .update(JSON.stringify({ e: publicJwk.e, kty: publicJwk.kty, n: publicJwk.n }))
  .digest());
const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' };

function signJwt(header, payload) {
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  const sig = crypto.sign('sha256', Buffer.from(input), privateKey);
  return `${input}.${b64url(sig)}`;
}

// Verifies a compact RS256 JWS made with this IdP's key; returns its payload or throws.
function verifyOwnJwt(token) {
  const parts = typeof token === 'string' ? token.split('.') : [];
  if (parts.length !== 3) throw new Error('not a compact JWS');
  const header = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
  if (header.alg !== 'RS256') throw new Error(`unexpected alg ${header.alg}`);
  if (header.kid !== undefined && header.kid !== KID) throw new Error('unknown kid');
  const ok = crypto.verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), publicKey,
    Buffer.from(parts[2], 'base64url'));
  if (!ok) throw new Error('bad signature');
  return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
}

// --- main ----------------------------------------------------------------------

const config = parseConfig();
const { default: Provider, errors } = await loadOidcProvider();

const usersBySub = new Map(config.users.map((u) => [u.sub, u]));
const usersByLogin = new Map(config.users.map((u) => [u.login, u]));
const clientsById = new Map(config.clients.map((c) => [c.client_id, c]));

function userClaims(user) {
  const claims = { sub: user.sub, email_verified: true, groups: [...user.groups] };
  if (user.email !== undefined) claims.email = user.email;
  if (user.name !== undefined) claims.name = user.name;
  claims.preferred_username = user.login;
  return claims;
}

function idJagFor({ sub, audience, clientId, resource, scope, jti, expOffset = ID_JAG_TTL }) {
  const now = Math.floor(Date.now() / 1000);
  const payload = {
    iss: issuer,
    sub,
    aud: audience,
    client_id: clientId,
    jti: jti || b64url(crypto.randomBytes(18)),
    exp: now + expOffset,
    iat: now,
  };
  if (resource !== undefined) payload.resource = resource;
  if (scope !== undefined) payload.scope = scope;
  const user = usersBySub.get(sub);
  if (user?.email !== undefined) {
    payload.email = user.email;
    payload.email_verified = true;
  }
  return signJwt({ alg: 'RS256', typ: 'oauth-id-jag+jwt', kid: KID }, payload);
}

let provider; // set once listening
let issuer;

const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    console.error('idp: request failed', req.method, req.url, err);
    if (!res.headersSent) send(res, 500, 'text/plain', 'internal error');
    else res.destroy();
  });
});

async function handle(req, res) {
  if (!provider) {
    send(res, 503, 'text/plain', 'starting');
    return;
  }
  const url = new URL(req.url, issuer);
  const m = url.pathname.match(/^\/interaction\/([^/]+)(\/login)?$/);
  if (m) {
    if (req.method === 'GET' && !m[2]) return interactionGet(req, res);
    if (req.method === 'POST' && m[2]) return interactionLogin(req, res);
    send(res, 405, 'text/plain', 'method not allowed');
    return;
  }
  if (url.pathname === '/test/id-jag') {
    if (req.method !== 'POST') {
      send(res, 405, 'text/plain', 'method not allowed');
      return;
    }
    return testIdJag(req, res);
  }
  return provider.callback()(req, res);
}

function loginPage(uid, clientId, error, login = '') {
  const err = error ? `<p class="error" id="error">${escapeHtml(error)}</p>` : '';
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Sign in</title></head>
<body>
<h1>Sign in to ${escapeHtml(issuer)}</h1>
<p>Client: ${escapeHtml(clientId)}</p>
${err}
<form method="post" action="/interaction/${escapeHtml(uid)}/login">
<label>Login <input type="text" name="login" value="${escapeHtml(login)}" autofocus></label>
<label>Password <input type="password" name="password"></label>
<button type="submit">Sign in</button>
</form>
</body></html>
`;
}

async function interactionDetailsOr400(req, res) {
  try {
    return await provider.interactionDetails(req, res);
  } catch (err) {
    console.error('idp: interaction not found', req.url, err?.message ?? err);
    send(res, 400, 'text/plain', `interaction not found: ${err?.message ?? err}`);
    return undefined;
  }
}

// Makes (or extends) the grant that covers everything asked for, so that the
// consent prompt never shows.
async function grantFor(details, accountId) {
  const { params, prompt } = details;
  let grant;
  if (details.grantId) grant = await provider.Grant.find(details.grantId);
  if (grant && grant.accountId !== accountId) grant = undefined;
  if (!grant) grant = new provider.Grant({ accountId, clientId: params.client_id });
  grant.addOIDCScope(typeof params.scope === 'string' && params.scope ? params.scope : 'openid');
  grant.addOIDCClaims(['sub', 'email', 'email_verified', 'name', 'groups', 'preferred_username']);
  const d = prompt?.details ?? {};
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  if (d.missingResourceScopes) {
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes)) {
      grant.addResourceScope(indicator, scopes.join(' '));
    }
  }
  return grant.save();
}

async function interactionGet(req, res) {
  const details = await interactionDetailsOr400(req, res);
  if (!details) return;
  const { uid, prompt, params, session } = details;
  if (prompt.name === 'login') {
    send(res, 200, 'text/html; charset=utf-8', loginPage(uid, params.client_id));
    return;
  }
  if (prompt.name === 'consent') {
    const accountId = session?.accountId;
    const grantId = await grantFor(details, accountId);
    await provider.interactionFinished(req, res, { consent: { grantId } },
      { mergeWithLastSubmission: true });
    return;
  }
  console.error('idp: unexpected prompt', prompt.name);
  await provider.interactionFinished(req, res, {
    error: 'access_denied', error_description: `unsupported prompt ${prompt.name}`,
  }, { mergeWithLastSubmission: false });
}

async function interactionLogin(req, res) {
  const details = await interactionDetailsOr400(req, res);
  if (!details) return;
  const { uid, prompt, params } = details;
  const form = new URLSearchParams(await readBody(req));
  const login = form.get('login') ?? '';
  const password = form.get('password') ?? '';
  if (prompt.name !== 'login') {
    // Already past login (e.g. resubmitted): carry on with the flow.
    return interactionGet(req, res);
  }
  const user = usersByLogin.get(login);
  const ok = user && user.password.length === password.length
    && crypto.timingSafeEqual(Buffer.from(user.password), Buffer.from(password));
  if (!ok) {
    send(res, 200, 'text/html; charset=utf-8',
      loginPage(uid, params.client_id, 'Invalid login or password.', login));
    return;
  }
  if (details.session?.accountId && details.session.accountId !== user.sub) {
    // Another user is signed in with this cookie jar: end that session here
    // rather than through oidc-provider's auto-submitting logout form, which
    // only a browser would follow.
    const old = details.session.cookie ? await provider.Session.find(details.session.cookie) : undefined;
    if (old) await old.destroy();
    details.session = undefined;
    await details.save(Math.max(details.exp - Math.floor(Date.now() / 1000), 1));
  }
  const grantId = await grantFor(details, user.sub);
  await provider.interactionFinished(req, res, {
    login: { accountId: user.sub, amr: ['pwd'] },
    consent: { grantId },
  }, { mergeWithLastSubmission: false });
}

async function testIdJag(req, res) {
  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch (err) {
    sendJson(res, 400, { error: 'invalid_request', error_description: 'body must be JSON' });
    return;
  }
  if (!body || typeof body.sub !== 'string' || typeof body.audience !== 'string'
    || typeof body.client_id !== 'string') {
    sendJson(res, 400, { error: 'invalid_request', error_description: 'sub, audience and client_id are required strings' });
    return;
  }
  const expOffset = Number.isFinite(body.exp_offset_seconds) ? Math.trunc(body.exp_offset_seconds) : ID_JAG_TTL;
  const idJag = idJagFor({
    sub: body.sub,
    audience: body.audience,
    clientId: body.client_id,
    resource: body.resource,
    scope: body.scope,
    jti: typeof body.jti === 'string' && body.jti ? body.jti : undefined,
    expOffset,
  });
  sendJson(res, 200, { id_jag: idJag });
}

// RFC 8693 token exchange of an ID token this IdP issued for an ID-JAG.
async function tokenExchangeHandler(ctx) {
  const { params, client } = ctx.oidc;
  const { InvalidGrant, InvalidRequest, InvalidTarget } = errors;
  if (params.requested_token_type !== ID_JAG_TYPE) {
    throw new InvalidRequest(`requested_token_type must be ${ID_JAG_TYPE}`);
  }
  if (params.subject_token_type !== ID_TOKEN_TYPE) {
    throw new InvalidRequest(`subject_token_type must be ${ID_TOKEN_TYPE}`);
  }
  if (!params.subject_token) throw new InvalidRequest('missing required parameter subject_token');
  if (!params.audience) throw new InvalidTarget('missing required parameter audience');
  let claims;
  try {
    claims = verifyOwnJwt(params.subject_token);
  } catch (err) {
    throw new InvalidGrant(`subject_token is invalid: ${err.message}`);
  }
  const now = Math.floor(Date.now() / 1000);
  if (claims.iss !== issuer) throw new InvalidGrant('subject_token was not issued by this IdP');
  if (typeof claims.exp !== 'number' || claims.exp <= now) throw new InvalidGrant('subject_token is expired');
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(client.clientId)) {
    throw new InvalidGrant('subject_token was not issued to this client');
  }
  if (!usersBySub.has(claims.sub)) throw new InvalidGrant('subject_token subject is unknown');
  const idJag = idJagFor({
    sub: claims.sub,
    audience: params.audience,
    clientId: client.clientId,
    resource: params.resource,
    scope: params.scope,
  });
  ctx.body = {
    access_token: idJag,
    issued_token_type: ID_JAG_TYPE,
    token_type: 'N_A',
    expires_in: ID_JAG_TTL,
  };
}

function buildProvider() {
  const clients = config.clients.map((c) => ({
    client_id: c.client_id,
    client_secret: c.client_secret,
    redirect_uris: c.redirect_uris,
    response_types: ['code'],
    grant_types: ['authorization_code', 'refresh_token', TOKEN_EXCHANGE],
    // client_secret_basic and client_secret_post are both accepted for either.
    token_endpoint_auth_method: 'client_secret_basic',
    id_token_signed_response_alg: 'RS256',
  }));
  const p = new Provider(issuer, {
    clients,
    jwks: { keys: [privateJwk] },
    async findAccount(ctx, sub) {
      const user = usersBySub.get(sub);
      if (!user) return undefined;
      return { accountId: sub, async claims() { return userClaims(user); } };
    },
    // Everything rides on `openid` too, so the ID token always carries it.
    claims: {
      openid: ['sub', 'email', 'email_verified', 'name', 'groups', 'preferred_username'],
      email: ['email', 'email_verified'],
      profile: ['name', 'preferred_username'],
      groups: ['groups'],
    },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    pkce: { required: () => false },
    features: {
      devInteractions: { enabled: false },
      resourceIndicators: { enabled: false },
      userinfo: { enabled: true },
      revocation: { enabled: true },
    },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    cookies: { keys: [b64url(crypto.randomBytes(32))] },
    ttl: {
      AccessToken: 3600,
      AuthorizationCode: 600,
      IdToken: 3600,
      RefreshToken: 86400,
      Interaction: 3600,
      Session: 86400,
      Grant: 86400,
    },
    async renderError(ctx, out, error) {
      console.error('idp: error page', ctx.method, ctx.path, out, error?.stack ?? error);
      ctx.type = 'html';
      ctx.body = `<!DOCTYPE html><html><head><meta charset="utf-8"><title>Error</title></head><body>
<h1>Error</h1><pre id="error">${escapeHtml(JSON.stringify(out, null, 2))}</pre></body></html>`;
    },
  });
  p.registerGrantType(TOKEN_EXCHANGE, tokenExchangeHandler, [
    'audience', 'resource', 'scope', 'subject_token', 'subject_token_type',
    'requested_token_type', 'actor_token', 'actor_token_type',
  ]);
  for (const event of ['server_error', 'authorization.error', 'grant.error', 'userinfo.error',
    'introspection.error', 'revocation.error', 'jwks.error', 'discovery.error',
    'end_session.error', 'check_session.error', 'backchannel.error']) {
    p.on(event, (...args) => {
      const err = args.find((a) => a instanceof Error);
      console.error(`idp: ${event}:`, err?.error ?? '', err?.error_description ?? err?.message ?? '',
        err?.error_detail ? `(${err.error_detail})` : '');
      if (event === 'server_error') console.error(err?.stack ?? err);
    });
  }
  return p;
}

server.on('error', (err) => fail('server error', err));
server.listen(config.port, '127.0.0.1', () => {
  const { port } = server.address();
  issuer = `http://127.0.0.1:${port}`;
  try {
    provider = buildProvider();
  } catch (err) {
    fail('could not configure oidc-provider', err);
  }
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

if (config.exitOnStdinClose) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('close', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
process.on('unhandledRejection', (err) => console.error('idp: unhandled rejection', err));
