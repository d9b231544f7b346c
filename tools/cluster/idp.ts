/**
 * The topology's identity provider: node-oidc-provider (idp-server.ts) as a process of its own on
 * 127.0.0.1, as an organisation's IdP (Okta, Entra ID, Google, Keycloak) would be in production.
 *
 * - People, who sign in with a password on its login page (Temporal Web, `cluster login`): a
 *   viewer (reads: `default:read`), an operator (reads and acts: cancel, signal, terminate,
 *   reset, update: `default:admin`, admin on the namespace), an administrator (the whole
 *   cluster: `temporal-system:admin`), and the console's support and finance (`default:read`,
 *   with `support` or `finance` in the `mpf_roles` claim). What each role may do is the server's authorizer's
 *   (tools/cluster/temporal-server/authz.go). Passwords are generated per run into 0600 files beside the
 *   other secrets (idp_password_<person>); the IdP holds only their scrypt hashes.
 * - Machine clients (client credentials): the workers, the gateways, and the admin tools (the
 *   namespace job, the launcher's readiness checks); each secret in idp_client_secret_<client>.
 * - Every access token is a JWT (ES256, the key in idp_signing_key, published at the JWKS URL) for
 *   one audience, the Temporal API, carrying the `permissions` claim in Temporal's format
 *   (`<namespace>:read|write|worker|admin`, `temporal-system:<role>` for the whole cluster).
 */
import { generateKeyPairSync, randomBytes, scryptSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { PROJECT_ROOT } from '../../src/temporal/provision';
import { Child } from './processes';
import type { PortBook } from './ports';
import { NAMESPACE } from './topology';

/** The audience of every access token: the Temporal API (the server's `global.authorization.audience`). */
export const TEMPORAL_AUDIENCE = 'urn:merchant-payment-flows:temporal';
/** Temporal's default JWT claim mapper reads this claim; `temporal-system` is its name for the whole cluster. */
export const PERMISSIONS_CLAIM = 'permissions';
export const SYSTEM_SCOPE = 'temporal-system';

/** The claim naming a person's console roles besides their permissions (src/starter/console/roles.ts). */
export const ROLES_CLAIM = 'mpf_roles';

export type PersonId = 'viewer' | 'operator' | 'administrator' | 'support' | 'finance';
/**
 * The people. support and finance are the merchant's people of the console (/console/ on each
 * gateway): they read the namespace, and `finance` in their roles claim lets finance export CSV;
 * the console's operator is whoever holds admin on the namespace.
 */
export const IDP_PEOPLE: ReadonlyArray<{ id: PersonId; name: string; permissions: string[]; roles?: string[] }> = [
  { id: 'viewer', name: 'Vera Viewer', permissions: [`${NAMESPACE}:read`] },
  { id: 'operator', name: 'Omar Operator', permissions: [`${NAMESPACE}:admin`] },
  { id: 'administrator', name: 'Ada Administrator', permissions: [`${SYSTEM_SCOPE}:admin`, `${NAMESPACE}:admin`] },
  { id: 'support', name: 'Sam Support', permissions: [`${NAMESPACE}:read`], roles: ['support'] },
  { id: 'finance', name: 'Fay Finance', permissions: [`${NAMESPACE}:read`], roles: ['finance'] },
];

export type MachineClientId = 'mpf-worker' | 'mpf-gateway' | 'mpf-admin-tools';
/**
 * The machine clients. Our authorizer (authz.go) lets only `worker` poll and complete tasks, and
 * never lets `write` terminate, cancel or reset: a worker holds `worker` to work and `write` to
 * start and signal the flows it starts itself (the provider guard's); a gateway holds `write`.
 */
export const IDP_MACHINE_CLIENTS: ReadonlyArray<{ id: MachineClientId; permissions: string[] }> = [
  { id: 'mpf-worker', permissions: [`${NAMESPACE}:worker`, `${NAMESPACE}:write`] },
  { id: 'mpf-gateway', permissions: [`${NAMESPACE}:write`] },
  { id: 'mpf-admin-tools', permissions: [`${SYSTEM_SCOPE}:admin`] },
];
/** Temporal Web's client (authorization code, confidential) and the operator's CLI (authorization code with PKCE, public, any loopback port). */
export const UI_CLIENT_ID = 'temporal-ui';
export const CLI_CLIENT_ID = 'mpf-cli';
export const CLI_REDIRECT_URI = 'http://127.0.0.1/callback';
/**
 * The gateways' console (authorization code with PKCE, public): a native client, so any loopback
 * port matches (every gateway of `mpf cluster up` and compose's on localhost:8080); a deployment
 * registers its gateways' https callback instead.
 */
export const CONSOLE_CLIENT_ID = 'mpf-console';
export const CONSOLE_REDIRECT_URIS = ['http://127.0.0.1/console/callback', 'http://localhost/console/callback'];

/** Lifetimes, in seconds; short ones (a test of renewal) through `mpf cluster up`'s environment. */
export interface IdpTtl {
  accessTokenSeconds: number;
  clientCredentialsSeconds: number;
  sessionSeconds: number;
}
export const DEFAULT_IDP_TTL: IdpTtl = { accessTokenSeconds: 900, clientCredentialsSeconds: 600, sessionSeconds: 8 * 3600 };

/** Every token (people's and machine clients') living `seconds`: short ones test renewal. */
export function idpTtlOf(seconds: number): IdpTtl {
  return { ...DEFAULT_IDP_TTL, accessTokenSeconds: seconds, clientCredentialsSeconds: seconds };
}

/**
 * The lifetimes MPF_CLUSTER_TOKEN_TTL_SECONDS asks for (`mpf cluster up` and compose's IdP read it
 * alike): unset or empty, the defaults; a whole number of at least 10, every token's; anything
 * else throws, naming the setting.
 */
export function idpTtlFromEnvironment(env: NodeJS.ProcessEnv): IdpTtl {
  const text = env.MPF_CLUSTER_TOKEN_TTL_SECONDS;
  if (text === undefined || text === '') return DEFAULT_IDP_TTL;
  const ttl = Number(text);
  if (!(Number.isInteger(ttl) && ttl >= 10)) throw new Error(`MPF_CLUSTER_TOKEN_TTL_SECONDS: ${JSON.stringify(text)} is not a whole number of seconds of at least 10`);
  return idpTtlOf(ttl);
}

/** What idp-server.ts reads (written 0600: it holds the signing key and the client secrets). */
export interface IdpServerConfig {
  issuer: string;
  host: string;
  port: number;
  audience: string;
  jwks: Array<Record<string, unknown>>;
  cookieKeys: string[];
  ttl: IdpTtl;
  people: Array<{ id: string; name: string; email: string; passwordHash: string; permissions: string[]; roles?: string[] }>;
  clients: Array<Record<string, unknown> & { client_id: string; permissions?: string[] }>;
}

export const idpSecretFiles = {
  signingKey: 'idp_signing_key',
  cookieKey: 'idp_cookie_key',
  password: (p: PersonId) => `idp_password_${p}`,
  clientSecret: (c: MachineClientId | typeof UI_CLIENT_ID) => `idp_client_secret_${c}`,
} as const;

export interface IdpSecrets {
  signingKey: Record<string, unknown>;
  cookieKey: string;
  passwords: Record<PersonId, string>;
  clientSecrets: Record<MachineClientId | typeof UI_CLIENT_ID, string>;
}

/** One secret file: kept when `reuse` and present, else made by `make` and written 0600. */
function secretFile(dir: string, name: string, reuse: boolean, make: () => string): string {
  const p = path.join(dir, name);
  if (reuse) {
    try {
      const kept = fs.readFileSync(p, 'utf8').trim();
      if (kept) return kept;
    } catch {
      // not there yet: made below
    }
  }
  const value = make();
  fs.rmSync(p, { force: true });
  fs.writeFileSync(p, `${value}\n`, { mode: 0o600, flag: 'wx' });
  return value;
}

/** The IdP's secrets in the run's secrets directory (0600 files), kept with --keep-data. */
export function prepareIdpSecrets(secretsDir: string, reuse: boolean): IdpSecrets {
  const signingKey = JSON.parse(secretFile(secretsDir, idpSecretFiles.signingKey, reuse, () => {
    const jwk = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
    return JSON.stringify({ ...jwk, kid: randomBytes(12).toString('hex'), alg: 'ES256', use: 'sig' });
  })) as Record<string, unknown>;
  const word = () => randomBytes(18).toString('base64url');
  const passwords = Object.fromEntries(IDP_PEOPLE.map((p) => [p.id, secretFile(secretsDir, idpSecretFiles.password(p.id), reuse, word)])) as IdpSecrets['passwords'];
  const clientIds = [...IDP_MACHINE_CLIENTS.map((c) => c.id), UI_CLIENT_ID] as const;
  const clientSecrets = Object.fromEntries(clientIds.map((c) => [c, secretFile(secretsDir, idpSecretFiles.clientSecret(c), reuse, () => randomBytes(32).toString('hex'))])) as IdpSecrets['clientSecrets'];
  return { signingKey, cookieKey: secretFile(secretsDir, idpSecretFiles.cookieKey, reuse, () => randomBytes(32).toString('hex')), passwords, clientSecrets };
}

export function hashPassword(password: string): string {
  const salt = randomBytes(16);
  return `scrypt$${salt.toString('base64')}$${scryptSync(password, salt, 32).toString('base64')}`;
}

/** The IdP's configuration: its people, clients, key and lifetimes. `uiCallbackUrl`: Temporal Web's redirect. */
export function idpServerConfig(o: { issuer: string; port: number; secrets: IdpSecrets; ttl: IdpTtl; uiCallbackUrls: string[] }): IdpServerConfig {
  const machine = IDP_MACHINE_CLIENTS.map((c) => ({
    client_id: c.id,
    client_secret: o.secrets.clientSecrets[c.id],
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    permissions: c.permissions,
  }));
  return {
    issuer: o.issuer,
    host: '127.0.0.1',
    port: o.port,
    audience: TEMPORAL_AUDIENCE,
    jwks: [o.secrets.signingKey],
    cookieKeys: [o.secrets.cookieKey],
    ttl: o.ttl,
    people: IDP_PEOPLE.map((p) => ({ id: p.id, name: p.name, email: `${p.id}@mpf.invalid`, passwordHash: hashPassword(o.secrets.passwords[p.id]), permissions: p.permissions, ...(p.roles ? { roles: p.roles } : {}) })),
    clients: [
      ...machine,
      {
        client_id: UI_CLIENT_ID,
        client_secret: o.secrets.clientSecrets[UI_CLIENT_ID],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: o.uiCallbackUrls,
        token_endpoint_auth_method: 'client_secret_basic',
      },
      {
        client_id: CLI_CLIENT_ID,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: [CLI_REDIRECT_URI],
        application_type: 'native',
        token_endpoint_auth_method: 'none',
      },
      {
        client_id: CONSOLE_CLIENT_ID,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        redirect_uris: CONSOLE_REDIRECT_URIS,
        application_type: 'native',
        token_endpoint_auth_method: 'none',
      },
    ],
  };
}

export interface RunningIdp {
  issuer: string;
  port: number;
  pid: number;
  jwksUrl: string;
  tokenUrl: string;
  child: Child;
  stop(): Promise<void>;
}

async function discoveryServed(issuer: string): Promise<boolean> {
  const res = await request(`${issuer}/.well-known/openid-configuration`, { headersTimeout: 2_000, bodyTimeout: 2_000 });
  const body = (await res.body.json()) as { jwks_uri?: string };
  if (res.statusCode !== 200 || !body.jwks_uri) return false;
  const jwks = await request(body.jwks_uri, { headersTimeout: 2_000, bodyTimeout: 2_000 });
  await jwks.body.text();
  return jwks.statusCode === 200;
}

export interface IdpOptions {
  stateDir: string;
  logDir: string;
  runId: string;
  secrets: IdpSecrets;
  ttl: IdpTtl;
  ports: PortBook;
  /** Temporal Web's callback URLs (its origin is known before it starts). */
  uiCallbackUrls: string[];
}

/** Starts the IdP (its own process) and waits until it publishes its discovery document and JWKS. */
export async function startIdp(o: IdpOptions): Promise<RunningIdp> {
  const dir = path.join(o.stateDir, 'idp');
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const configFile = path.join(dir, 'config.json');
  for (let attempt = 1; ; attempt++) {
    const port = await o.ports.one('idp', { fresh: attempt > 1 });
    const issuer = `http://127.0.0.1:${port}`;
    fs.rmSync(configFile, { force: true });
    fs.writeFileSync(configFile, JSON.stringify(idpServerConfig({ issuer, port, secrets: o.secrets, ttl: o.ttl, uiCallbackUrls: o.uiCallbackUrls })), { mode: 0o600 });
    const child = new Child('idp', process.execPath, ['--require', 'tsx/cjs', path.join(PROJECT_ROOT, 'tools', 'cluster', 'idp-server.ts'), configFile], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' },
      logFile: path.join(o.logDir, 'idp.log'),
      runId: o.runId,
    });
    try {
      await child.waitUntil(() => discoveryServed(issuer), 60_000, 'serving its discovery document');
    } catch (e) {
      await child.stop();
      if (/EADDRINUSE/.test(child.log()) && attempt < 3) continue;
      throw e;
    }
    return { issuer, port, pid: child.pid, jwksUrl: `${issuer}/jwks`, tokenUrl: `${issuer}/token`, child, stop: () => child.stop() };
  }
}
