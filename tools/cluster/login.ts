/**
 * A person's token from the topology's identity provider, for the operator's shell (`temporal`,
 * `mpf` through TEMPORAL_API_KEY) and the tests: the authorization code flow with PKCE of the
 * public client `mpf-cli` (openid-client), with the IdP's own login page filled in with the
 * person's password, as a browser would. The token is a JWT for the Temporal API with the person's
 * permissions; it lives as long as the IdP's access-token lifetime, then this is run again.
 *
 *   npx tsx tools/cluster/login.ts --user operator [--state-dir .data/cluster]
 *     reads the password from stdin (or --password-file), writes <state dir>/tokens/<user> (0600),
 *     which cluster.env reads into TEMPORAL_API_KEY when a shell sources it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { CLI_CLIENT_ID, CLI_REDIRECT_URI } from './idp';
import type * as OpenIdClientNs from 'openid-client' with { 'resolution-mode': 'import' };

type OpenIdClient = typeof OpenIdClientNs;

export class LoginRefused extends Error {
  override name = 'LoginRefused';
}

/** A tiny cookie jar for the IdP's own cookies, over manual redirects (what a browser does). */
async function browse(start: URL, form: { login: string; password: string }): Promise<URL> {
  const jar = new Map<string, string>();
  const cookieHeader = () => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  let url = start;
  let body: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    const res = await fetch(url, { method: body ? 'POST' : 'GET', redirect: 'manual', headers: { cookie: cookieHeader(), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) }, ...(body ? { body } : {}) });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      jar.set(pair!.slice(0, i).trim(), pair!.slice(i + 1));
    }
    body = undefined;
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location) {
      const next = new URL(location, url);
      await res.body?.cancel();
      if (next.href.startsWith(CLI_REDIRECT_URI)) return next;
      url = next;
      continue;
    }
    const html = await res.text();
    if (res.status === 401) throw new LoginRefused(`the identity provider refused the sign-in of ${form.login}: unknown user or wrong password`);
    const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
    if (res.status !== 200 || !action) throw new LoginRefused(`the identity provider answered ${res.status} at ${url.pathname}: ${html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 200)}`);
    url = new URL(action.replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n))), url);
    body = new URLSearchParams(form);
  }
  throw new LoginRefused('the sign-in did not end after 20 redirects');
}

export interface PersonToken {
  accessToken: string;
  idToken?: string;
  expiresAt: number;
}

/** Signs `user` in with `password` at the IdP `issuer` (http only on loopback) and returns their tokens. */
export async function personLogin(o: { issuer: string; user: string; password: string }): Promise<PersonToken> {
  const oidc = (await import('openid-client')) as OpenIdClient;
  const issuer = new URL(o.issuer);
  const config = await oidc.discovery(issuer, CLI_CLIENT_ID, undefined, oidc.None(), issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {});
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const authUrl = oidc.buildAuthorizationUrl(config, {
    redirect_uri: CLI_REDIRECT_URI, scope: 'openid profile email', state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  const callback = await browse(authUrl, { login: o.user, password: o.password });
  const tokens = await oidc.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, { redirect_uri: CLI_REDIRECT_URI });
  return { accessToken: tokens.access_token, ...(tokens.id_token ? { idToken: tokens.id_token } : {}), expiresAt: Date.now() + (tokens.expiresIn() ?? 0) * 1000 };
}

/** Where `cluster login` keeps a person's token (cluster.env reads the operator's). */
export const tokenFile = (stateDir: string, user: string) => path.join(stateDir, 'tokens', user);

async function main(argv: string[]): Promise<number> {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const user = arg('--user');
  const stateDir = path.resolve(arg('--state-dir') ?? path.join(__dirname, '..', '..', '.data', 'cluster'));
  if (!user) {
    process.stderr.write('usage: login.ts --user <viewer|operator|administrator> [--state-dir DIR] [--password-file FILE] (the password on stdin otherwise)\n');
    return 2;
  }
  const info = JSON.parse(fs.readFileSync(path.join(stateDir, 'cluster.json'), 'utf8')) as { idp?: { issuer: string } };
  if (!info.idp) throw new Error(`no identity provider in ${stateDir}/cluster.json: is mpf cluster up running there?`);
  const pwFile = arg('--password-file');
  const password = (pwFile ? fs.readFileSync(pwFile, 'utf8') : fs.readFileSync(0, 'utf8')).trim();
  const t = await personLogin({ issuer: info.idp.issuer, user, password });
  const file = tokenFile(stateDir, user);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, `${t.accessToken}\n`, { mode: 0o600 });
  process.stdout.write(`signed in as ${user} until ${new Date(t.expiresAt).toISOString()}; token in ${file} (source cluster.env again: it reads it into TEMPORAL_API_KEY)\n`);
  return 0;
}

if (require.main === module) {
  main(process.argv).then((code) => process.exit(code), (e: unknown) => {
    process.stderr.write(`login: ${(e as Error).message}\n`);
    process.exit(1);
  });
}
