/**
 * The identity provider's process: node-oidc-provider (OpenID Certified) with the configuration
 * `mpf cluster up` wrote (idp.ts: people, machine clients, the signing key, lifetimes). Run as
 * `node --import tsx tools/cluster/idp-server.ts <config file>`; prints "idp: listening on <issuer>".
 * It serves plain http, as `mpf cluster up`'s IdP on loopback does, unless the config names a
 * certificate (`tls`, IdpServerFileConfig): then https, as compose's `idp` service (docker/idp.ts).
 *
 * What is ours is only configuration and the login page: the library issues every token (JWT
 * access tokens for the Temporal API's audience, with the `permissions` claim Temporal's default
 * JWT claim mapper reads) and runs the whole OAuth/OIDC protocol. The login page is the library's
 * interaction flow with a password check (scrypt hashes from the config); no consent screen, as
 * every client is one of the topology's own.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { scryptSync, timingSafeEqual } from 'node:crypto';
import type { IdpServerConfig } from './idp';
import type * as OidcModuleNs from 'oidc-provider' with { 'resolution-mode': 'import' };

/**
 * What idp-server.ts reads: idp.ts's configuration and, to serve https itself, its certificate and
 * key (PEM files, read once at start). The issuer's scheme must agree: https with `tls`, http
 * without (the discovery document names the issuer's URLs, which must reach this server as it is).
 */
export interface IdpServerFileConfig extends IdpServerConfig {
  tls?: { certFile: string; keyFile: string };
}

/** The server for `cfg`: https with its certificate when `tls` is set, else http (natively, on loopback). */
export function createIdpServer(cfg: IdpServerFileConfig, handler: http.RequestListener): http.Server | https.Server {
  const scheme = new URL(cfg.issuer).protocol;
  if (cfg.tls) {
    if (scheme !== 'https:') throw new Error(`issuer ${cfg.issuer}: with a certificate (tls) the issuer must be https`);
    return https.createServer({ cert: fs.readFileSync(cfg.tls.certFile), key: fs.readFileSync(cfg.tls.keyFile) }, handler);
  }
  if (scheme !== 'http:') throw new Error(`issuer ${cfg.issuer}: an https issuer needs a certificate (tls: { certFile, keyFile })`);
  return http.createServer(handler);
}

type OidcModule = typeof OidcModuleNs;
type ProviderInstance = InstanceType<OidcModule['Provider']>;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A password against its `scrypt$<salt b64>$<hash b64>` record, in constant time. */
export function passwordMatches(password: string, record: string): boolean {
  const [kind, salt, hash] = record.split('$');
  if (kind !== 'scrypt' || !salt || !hash) return false;
  const want = Buffer.from(hash, 'base64');
  const got = scryptSync(password, Buffer.from(salt, 'base64'), want.length);
  return timingSafeEqual(got, want);
}

function loginPage(uid: string, client: string, problem?: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in · merchant-payment-flows</title></head>
<body style="font-family:sans-serif;max-width:24rem;margin:4rem auto">
<h1>Sign in</h1><p>to <b>${escapeHtml(client)}</b></p>
${problem ? `<p role="alert" style="color:#b00">${escapeHtml(problem)}</p>` : ''}
<form method="post" action="/interaction/${escapeHtml(uid)}/login" autocomplete="off">
<label>User <input name="login" autofocus required></label><br><br>
<label>Password <input name="password" type="password" required></label><br><br>
<button type="submit">Sign in</button></form></body></html>`;
}

async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 16_384) throw new Error('form too large');
    chunks.push(c as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Grants every scope and claim asked for: the clients are all the topology's own (no consent screen). */
async function grantAll(provider: ProviderInstance, details: Awaited<ReturnType<ProviderInstance['interactionDetails']>>): Promise<string> {
  const { prompt, params, session, grantId } = details;
  const grant = grantId ? await provider.Grant.find(grantId) : new provider.Grant({ accountId: session!.accountId, clientId: params.client_id as string });
  if (!grant) throw new Error('grant expired');
  const d = prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
  return grant.save();
}

/** The login page and its form (`/interaction/<uid>`); everything else is the library's. */
async function interaction(provider: ProviderInstance, cfg: IdpServerConfig, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const details = await provider.interactionDetails(req, res);
  const client = String(details.params.client_id ?? '');
  if (details.prompt.name === 'consent') {
    await provider.interactionFinished(req, res, { consent: { grantId: await grantAll(provider, details) } }, { mergeWithLastSubmission: true });
    return;
  }
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(loginPage(details.uid, client));
    return;
  }
  const form = await readForm(req);
  const login = form.get('login') ?? '';
  const person = cfg.people.find((p) => p.id === login);
  // The same answer for an unknown user and a wrong password; the hash is computed either way.
  const ok = passwordMatches(form.get('password') ?? '', person?.passwordHash ?? cfg.people[0]!.passwordHash) && person !== undefined;
  if (!ok) {
    process.stdout.write(`idp: refused a sign-in as ${JSON.stringify(login.slice(0, 64))} (unknown user or wrong password)\n`);
    res.writeHead(401, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(loginPage(details.uid, client, 'Unknown user or wrong password.'));
    return;
  }
  process.stdout.write(`idp: ${person.id} signed in to ${client}\n`);
  await provider.interactionFinished(req, res, { login: { accountId: person.id } }, { mergeWithLastSubmission: false });
}

/** The library's configuration from ours. */
function providerConfiguration(cfg: IdpServerConfig, errors: OidcModule['errors']): ConstructorParameters<OidcModule['Provider']>[1] {
  const rolesOf = (token: { accountId?: string }): string[] | undefined => (token.accountId ? cfg.people.find((p) => p.id === token.accountId)?.roles : undefined);
  const permissionsOf = (token: { accountId?: string; clientId?: string; kind?: string }): string[] | undefined => {
    if (token.accountId) return cfg.people.find((p) => p.id === token.accountId)?.permissions;
    return cfg.clients.find((c) => c.client_id === token.clientId)?.permissions;
  };
  return {
    clients: cfg.clients.map(({ permissions: _p, ...c }) => c),
    clientDefaults: { grant_types: ['authorization_code'], id_token_signed_response_alg: 'ES256', response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic' },
    jwks: { keys: cfg.jwks },
    cookies: { keys: cfg.cookieKeys },
    // The people: their claims for ID tokens and userinfo.
    findAccount: (_ctx, id) => {
      const p = cfg.people.find((x) => x.id === id);
      if (!p) return undefined;
      return { accountId: p.id, claims: () => ({ sub: p.id, name: p.name, email: p.email, email_verified: true, preferred_username: p.id, permissions: p.permissions, ...(p.roles ? { mpf_roles: p.roles } : {}) }) };
    },
    claims: { openid: ['sub'], profile: ['name', 'preferred_username'], email: ['email', 'email_verified'], permissions: ['permissions'] },
    scopes: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
    interactions: { url: (_ctx, i) => `/interaction/${i.uid}` },
    pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' },
    ttl: {
      AccessToken: cfg.ttl.accessTokenSeconds,
      ClientCredentials: cfg.ttl.clientCredentialsSeconds,
      IdToken: cfg.ttl.accessTokenSeconds,
      Interaction: 600,
      Session: cfg.ttl.sessionSeconds,
      Grant: cfg.ttl.sessionSeconds,
      RefreshToken: cfg.ttl.sessionSeconds,
      AuthorizationCode: 60,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      // Every access token is a JWT for the Temporal API (its audience), signed with the key Temporal reads from the JWKS.
      resourceIndicators: {
        enabled: true,
        defaultResource: () => cfg.audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== cfg.audience) throw new errors.InvalidTarget(`unknown resource ${indicator}; the one resource is ${cfg.audience}`);
          return { scope: 'temporal', audience: cfg.audience, accessTokenFormat: 'jwt', accessTokenTTL: cfg.ttl.accessTokenSeconds, jwt: { sign: { alg: 'ES256' } } };
        },
      },
    },
    // Temporal's permissions claim (`<namespace>:read|write|worker|admin`), in every access token;
    // a person's console roles (mpf_roles) beside it when they have some.
    extraTokenClaims: (_ctx, token) => {
      const permissions = permissionsOf(token as { accountId?: string; clientId?: string });
      const roles = rolesOf(token as { accountId?: string });
      return permissions ? { permissions, ...(roles ? { mpf_roles: roles } : {}) } : undefined;
    },
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = `<!doctype html><title>Sign-in error</title><h1>${escapeHtml(String(out.error))}</h1><p>${escapeHtml(String(out.error_description ?? ''))}</p>`;
    },
  };
}

export async function main(argv: string[]): Promise<void> {
  const file = argv[2];
  if (!file) throw new Error('usage: idp-server.ts <config file>');
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8')) as IdpServerFileConfig;
  const { Provider, errors } = (await import('oidc-provider')) as OidcModule;
  const provider = new Provider(cfg.issuer, providerConfiguration(cfg, errors));
  provider.on('server_error', (_ctx, e) => process.stdout.write(`idp: server error: ${(e as Error).message}\n`));
  const callback = provider.callback();
  const server = createIdpServer(cfg, (req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      interaction(provider, cfg, req, res).catch((e: unknown) => {
        process.stdout.write(`idp: sign-in failed: ${(e as Error).message}\n`);
        if (!res.headersSent) res.writeHead(400, { 'content-type': 'text/plain' });
        res.end(`sign-in failed: ${(e as Error).message}; start again from the application\n`);
      });
      return;
    }
    void callback(req, res);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(cfg.port, cfg.host, resolve));
  process.stdout.write(`idp: listening on ${cfg.issuer}\n`);
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (require.main === module) {
  main(process.argv).catch((e: unknown) => {
    process.stderr.write(`idp: ${(e as Error).stack ?? String(e)}\n`);
    process.exit(1);
  });
}
