/**
 * A person's token from the topology's identity provider, for the operator's shell (`temporal`,
 * `mpf` through TEMPORAL_API_KEY) and the tests: the authorization code flow with PKCE of the
 * public client `mpf-cli` (openid-client), with the IdP's own login page filled in with the
 * person's password, as a browser would. The token is a JWT for the Temporal API with the person's
 * permissions; it lives as long as the IdP's access-token lifetime, then this is run again.
 *
 *   mpf cluster login --user operator [--state-dir .data/cluster] [--password-file FILE]
 *   npx tsx tools/cluster/login.ts --user operator [--state-dir .data/cluster] [--password-file FILE]
 *     read the password from stdin (a hidden prompt on a terminal) or --password-file, and write
 *     <state dir>/tokens/<user> (0600), which cluster.env reads into TEMPORAL_API_KEY and
 *     MPF_ACCESS_TOKEN when a shell sources it. Both run runClusterLogin (one home).
 */
import fs from 'node:fs';
import path from 'node:path';
import { CLI_CLIENT_ID, CLI_REDIRECT_URI, IDP_PEOPLE, type PersonId } from './idp';
import { DEFAULT_STATE_DIR, files, readInfo, runningUpPid } from './state';
import { readSecret } from '../../src/auth/secret-input';
import { idpNoAnswer } from '../../src/temporal/tokens';
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

/** The people who may sign in (tools/cluster/idp.ts IDP_PEOPLE). */
export const LOGIN_USERS: readonly PersonId[] = IDP_PEOPLE.map((p) => p.id);

/** Why `cluster login` cannot sign anyone in: one line naming what is wrong (exit 1, no stack trace). */
export class LoginError extends Error {
  override name = 'LoginError';
}

export interface ClusterLoginOptions {
  user: string;
  /** The state dir of the running `mpf cluster up`. */
  stateDir: string;
  /** A file holding the password; without it, the password is read from stdin (a hidden prompt on a terminal). */
  passwordFile?: string;
}

/**
 * Signs a person in at the identity provider of the cluster running from `stateDir` and writes
 * their access token to <stateDir>/tokens/<user> (0600). Throws LoginError naming what is wrong
 * (an unknown person, a wrong password, no cluster running there, an IdP that does not answer);
 * neither the password nor the token is ever in a message.
 */
export async function clusterLogin(o: ClusterLoginOptions, readPassword: () => Promise<string> = () => readPasswordFromStdin(o.user)): Promise<{ file: string; expiresAt: number }> {
  if (!LOGIN_USERS.includes(o.user as PersonId)) throw new LoginError(`--user: ${JSON.stringify(o.user.slice(0, 40))} is not a person of the cluster's identity provider (one of ${LOGIN_USERS.join(', ')})`);
  const stateDir = path.resolve(o.stateDir);
  if (runningUpPid(stateDir) === undefined) throw new LoginError(`no cluster is running from ${stateDir} (start one with: mpf cluster up --state-dir ${stateDir}; or name its state dir with --state-dir)`);
  const info = readInfo(stateDir);
  if (!info?.idp) {
    throw new LoginError(info?.auth === false || info?.status === 'ready'
      ? `the cluster running from ${stateDir} has no identity provider (started with MPF_CLUSTER_AUTH=0: the Temporal API authorises no call); there is no one to sign in as`
      : `the cluster running from ${stateDir} is still starting (no identity provider yet): wait for "cluster ready", then sign in`);
  }
  const password = o.passwordFile !== undefined ? readPasswordFile(o.passwordFile) : await readPassword();
  if (password === '') throw new LoginError(`no password given for ${o.user} (${o.passwordFile !== undefined ? `${o.passwordFile} is empty` : 'type it at the prompt, pipe it on stdin, or use --password-file'})`);
  let t: PersonToken;
  try {
    t = await personLogin({ issuer: info.idp.issuer, user: o.user, password });
  } catch (e) {
    if (e instanceof LoginRefused) throw new LoginError(e.message);
    const why = idpNoAnswer(e);
    if (why) throw new LoginError(`the identity provider at ${info.idp.issuer} does not answer (${why}): is it running? (mpf cluster restart idp --state-dir ${stateDir})`);
    // openid-client's errors name the protocol step (its messages hold no token or password).
    throw new LoginError(`the sign-in at ${info.idp.issuer} failed: ${((e as Error).message ?? String(e)).split('\n')[0]!.slice(0, 200)}`);
  }
  const file = tokenFile(stateDir, o.user);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.rmSync(file, { force: true });
  fs.writeFileSync(file, `${t.accessToken}\n`, { mode: 0o600 });
  return { file, expiresAt: t.expiresAt };
}

function readPasswordFile(file: string): string {
  try {
    return (fs.readFileSync(file, 'utf8').split(/\r?\n/)[0] ?? '').trim();
  } catch (e) {
    throw new LoginError(`--password-file: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** The password from stdin: a hidden prompt on a terminal (nothing echoed), else its first line (src/auth/secret-input.ts). */
async function readPasswordFromStdin(user: string): Promise<string> {
  try {
    return await readSecret(`password of ${user}: `);
  } catch (e) {
    throw new LoginError((e as Error).message);
  }
}

/**
 * `mpf cluster login` and this script: signs `user` in, prints where the token is and how the
 * shell uses it (never the token), and answers the exit code: 0 signed in, 1 refused or not
 * possible (one line on stderr naming why).
 */
export async function runClusterLogin(o: ClusterLoginOptions, io: { out: (line: string) => void; err: (line: string) => void } = { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) }): Promise<number> {
  let done: { file: string; expiresAt: number };
  try {
    done = await clusterLogin(o);
  } catch (e) {
    io.err(`mpf cluster login: ${e instanceof LoginError ? e.message : `${(e as Error).name}: ${((e as Error).message ?? '').split('\n')[0]}`}`);
    return 1;
  }
  const envFile = files(path.resolve(o.stateDir)).env;
  io.out(`signed in as ${o.user} until ${new Date(done.expiresAt).toISOString()}; the access token is in ${done.file} (0600)`);
  if (o.user === 'operator') {
    io.out(`  source cluster.env again (set -a; . ${envFile}; set +a): it reads it into TEMPORAL_API_KEY (temporal, mpf) and MPF_ACCESS_TOKEN (mpf at the gateway's operator routes)`);
  } else {
    io.out(`  cluster.env reads the operator's; to act as ${o.user} in this shell: export TEMPORAL_API_KEY="$(cat ${done.file})" MPF_ACCESS_TOKEN="$(cat ${done.file})"`);
  }
  return 0;
}

function usage(): never {
  process.stderr.write(`usage: login.ts --user <${LOGIN_USERS.join('|')}> [--state-dir DIR] [--password-file FILE] (the password on stdin otherwise)\n`);
  process.exit(2);
}

if (require.main === module) {
  const argv = process.argv;
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const user = arg('--user') ?? usage();
  const passwordFile = arg('--password-file');
  void runClusterLogin({ user, stateDir: arg('--state-dir') ?? DEFAULT_STATE_DIR, ...(passwordFile !== undefined ? { passwordFile } : {}) }).then((code) => process.exit(code));
}
