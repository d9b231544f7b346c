/**
 * Process configuration, validated with zod at start-up. Every variable may also be read from
 * NAME_FILE (a path), for secrets stores. A bad value is an error naming the variable.
 * Secrets are read here by the worker and gateway, never passed as workflow inputs.
 */
import { DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS } from './flow-defaults';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { LIMITS_ENV } from './limits-env';
import { PROVIDER_GUARD_ENV } from './provider-guard-env';
import { MERCHANT_EVENTS_ENV } from './merchant-events-env';
import { parseAllowedHosts } from './webhook-egress';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
  } catch {
    return false;
  }
}

const optionalNonEmpty = z.string().min(1).optional();
/** A comma-separated list ("a, b,c"), trimmed, empty entries dropped. */
const csv = z
  .string()
  .optional()
  .transform((v) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean));
/** Host names: a comma-separated list of bare host names (no scheme, port or path), lower-cased. */
const hostList = csv.pipe(
  z.array(
    z
      .string()
      .regex(/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/, 'must be a comma-separated list of host names (no scheme or port)')
      .transform((h) => h.toLowerCase()),
  ),
);
const httpUrl = z.url({ protocol: /^https?$/ });
/** Origins (scheme://host[:port]) for CORS, comma-separated, or '*'. */
const originList = csv.pipe(
  z.array(z.union([z.literal('*'), z.string().regex(/^https?:\/\/[^/\s,]+$/, 'must be a comma-separated list of origins such as http://localhost:8233')])),
);
const port = z.coerce.number().int().min(0).max(65535);
/** `host:port` (IPv6 as `[::]:port`) of an operations listener; port 0 = a free one (printed at start-up). */
const listenAddress = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'must be host:port, e.g. 0.0.0.0:9464 or 127.0.0.1:9464')
  .transform((v) => {
    const i = v.lastIndexOf(':');
    return { host: v.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(v.slice(i + 1)) };
  })
  .refine((a) => a.port <= 65535, 'port must be at most 65535')
  .optional();
const flag = z.enum(['0', '1', 'true', 'false']).optional().transform((v) => v === '1' || v === 'true');

const EnvVariables = z.object({
  /**
   * The provider's base URL. A non-loopback address needs MPS_LIVE=1 (there is no allowlist:
   * compose reaches its simulator over loopback). Unset: the worker refuses to start unless
   * MPS_PROVIDER=simulator asks for the embedded simulator (fail closed).
   */
  MPS_BASE_URL: httpUrl.optional(),
  /**
   * `simulator`: the worker embeds the local provider simulator (no money moves), only when
   * MPS_BASE_URL is unset and never under NODE_ENV=production. `live` (or unset): MPS_BASE_URL.
   */
  MPS_PROVIDER: z.enum(['live', 'simulator'], { message: "must be 'live' or 'simulator'" }).optional(),
  /** `production` forbids the embedded simulator and loopback notification URLs on a public gateway. */
  NODE_ENV: z.string().optional(),
  /** The provider's secret key (sent as its API requires); a secret. */
  MPS_SECRET_KEY: optionalNonEmpty,
  /** The provider's access token (Bearer); a secret. */
  MPS_ACCESS_TOKEN: optionalNonEmpty,
  /** Our merchant reference at the provider (`x-merchant-ref`). */
  MPS_MERCHANT_REF: optionalNonEmpty,
  /** `1` before any non-loopback MPS_BASE_URL is dialled: every call to the live provider moves real money. */
  MPS_LIVE: flag,
  /**
   * A provider simulator run as a service of its own (compose: `http://simulator:8090`, an origin).
   * The worker's forwarder (src/simulator/forwarder.ts) listens on MPS_BASE_URL, a loopback address,
   * and passes on to it only while its answers carry the simulator's mark. Refused with MPS_LIVE=1:
   * going live drops it.
   */
  MPS_SIMULATOR_UPSTREAM: httpUrl.optional(),
  /** `1`: the categories call also sends the Bearer token (default: only `x-merchant-ref`). */
  MPS_CATEGORIES_BEARER: flag,
  /** The Temporal frontend, `host:port` (the SDK's envconfig TLS variables apply to it). */
  TEMPORAL_ADDRESS: optionalNonEmpty,
  /** The Temporal namespace of the flows. */
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /** The task queue the worker polls and the clients start flows on. */
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('merchant-payment-flows'),
  /** mTLS to Temporal: this process's client certificate (PEM). Read by the SDK's envconfig; checked at start-up, a missing file is named. */
  TEMPORAL_TLS_CLIENT_CERT_PATH: optionalNonEmpty,
  /** mTLS to Temporal: the private key of that certificate (PEM). Set with TEMPORAL_TLS_CLIENT_CERT_PATH. */
  TEMPORAL_TLS_CLIENT_KEY_PATH: optionalNonEmpty,
  /** mTLS to Temporal: the CA that signed the frontend's certificate (PEM); unset = the system's roots. */
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: optionalNonEmpty,
  /** mTLS to Temporal: the name the frontend's certificate must carry when it differs from TEMPORAL_ADDRESS's host (`temporal` in `mpf cluster up`). */
  TEMPORAL_TLS_SERVER_NAME: optionalNonEmpty,
  /** Tokens for the Temporal API (a server that authorises with JWTs): the identity provider's issuer URL (https; http only on loopback). With the client id and secret, the process fetches its tokens with client credentials and renews them before they expire. */
  TEMPORAL_OIDC_ISSUER: optionalNonEmpty,
  /** Tokens for the Temporal API: this process's client id at the identity provider (client credentials). */
  TEMPORAL_OIDC_CLIENT_ID: optionalNonEmpty,
  /** Tokens for the Temporal API: that client's secret; a secret (use TEMPORAL_OIDC_CLIENT_SECRET_FILE). */
  TEMPORAL_OIDC_CLIENT_SECRET: optionalNonEmpty,
  /** Tokens for the Temporal API: the resource (audience) to ask tokens for, when the IdP needs it named (RFC 8707 `resource`). */
  TEMPORAL_OIDC_AUDIENCE: optionalNonEmpty,
  /** Tokens for the Temporal API: the scopes to ask for, space-separated, when the IdP needs some (Entra ID: `api://<app id>/.default`). */
  TEMPORAL_OIDC_SCOPE: optionalNonEmpty,
  /** Temporal Web's base URL, for the links `mpf demo` prints when TEMPORAL_ADDRESS is set. */
  TEMPORAL_UI_URL: httpUrl.optional(),
  /** The gateway's HTTP port (`mpf gateway --port` wins; 0 = a free one). */
  GATEWAY_PORT: port.default(8080),
  /** Interface the gateway listens on (`mpf gateway --host` wins); default 127.0.0.1. */
  GATEWAY_HOST: optionalNonEmpty,
  /** What browsers use: PIN page links (and notifications unless the next one is set). */
  GATEWAY_PUBLIC_URL: httpUrl.optional(),
  /** Base of the notification_url handed to the provider when it reaches us by another address. */
  GATEWAY_NOTIFICATION_BASE_URL: httpUrl.optional(),
  /** The backend's API key (`x-api-key` or `Authorization: Bearer`), at least 16 characters; a secret. */
  GATEWAY_API_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
  /**
   * The gateway's keyring: a JSON array of {id, role (read_only, backend, operator), sha256, label?,
   * expires_at?}, from `mpf keys new`. As GATEWAY_API_KEYS_FILE it is a file the gateway re-reads
   * when it changes (rotation without a restart). Holds no secret: only SHA-256 digests of keys.
   */
  GATEWAY_API_KEYS: z.string().optional(),
  /**
   * Behind a reverse proxy: `true` (trust X-Forwarded-For from any hop) or the proxies'
   * addresses/CIDRs, comma-separated, so per-address limits see clients, not the proxy. Unset/false: off.
   */
  GATEWAY_TRUST_PROXY: z
    .string()
    .optional()
    .transform((v): boolean | string[] => {
      const t = (v ?? '').trim();
      if (t === '' || t === 'false' || t === '0') return false;
      if (t === 'true' || t === '1') return true;
      return t.split(',').map((x) => x.trim()).filter(Boolean);
    }),
  /**
   * Where the gateway serves GET /metrics (Prometheus), on a listener of its own, never the API's
   * port, so it can stay on an internal interface; unset = no metrics listener.
   */
  GATEWAY_METRICS_ADDRESS: listenAddress,
  /**
   * People sign in at the gateway's operator routes (/v1/admin/*) and its /codec with their
   * identity provider's access token (`Authorization: Bearer <JWT>`): the IdP's issuer URL (`iss`
   * of its tokens; https, http only on loopback). Unset = off: API keys only. Needs GATEWAY_OIDC_AUDIENCE.
   */
  GATEWAY_OIDC_ISSUER: optionalNonEmpty,
  /** The audience (`aud`) people's access tokens must carry, e.g. the Temporal API's (`urn:merchant-payment-flows:temporal` in `mpf cluster up`). Needs GATEWAY_OIDC_ISSUER. */
  GATEWAY_OIDC_AUDIENCE: optionalNonEmpty,
  /** The IdP's JWKS URL, when it is not the `jwks_uri` of the issuer's discovery document (https, http only on loopback); unset = discovered. */
  GATEWAY_OIDC_JWKS_URL: httpUrl.optional(),
  /** The claim of the access token listing Temporal's `<namespace>:<role>` permissions (Entra ID app roles: `roles`); default `permissions`. */
  GATEWAY_OIDC_PERMISSIONS_CLAIM: z.string().regex(/^[A-Za-z0-9_:./-]{1,100}$/, 'must be a claim name (letters, digits, _ : . / -)').default('permissions'),
  /**
   * The console (/console/) signs people in at GATEWAY_OIDC_ISSUER as this public client
   * (authorization code with PKCE, redirected to `<GATEWAY_PUBLIC_URL>/console/callback`); register
   * it at the IdP. Default `mpf-console`. The console is served whenever GATEWAY_OIDC_ISSUER is set.
   */
  GATEWAY_CONSOLE_CLIENT_ID: z.string().regex(/^[A-Za-z0-9_:./-]{1,200}$/, 'must be a client id (letters, digits, _ : . / -)').default('mpf-console'),
  /** Live Idempotency-Key records (each a workflow kept 24 h) one API key may hold; past it, a new key is 429 (default 1000). */
  GATEWAY_IDEMPOTENCY_MAX_LIVE_PER_KEY: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  /** Where the worker serves GET /metrics (the SDK's and ours), /healthz and /readyz; unset = none. */
  WORKER_METRICS_ADDRESS: listenAddress,
  /**
   * How many flows the worker keeps in its sticky cache (default MPF_WORKER_TUNING's 1000). A
   * parked flow past it is evicted and replayed from its history when it wakes: memory stays
   * bounded however many flows wait for PINs and payments.
   */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(0).max(100_000).optional(),
  /**
   * How often (seconds) each worker looks for swaps and payment links closed from outside the flow
   * (terminated, timed out or failed in Temporal) and carries each on to a truthful end with its
   * merchant event (`terminated`, or `needs_reconciliation` where money may have moved); default 10,
   * 0 = never (then such a flow's view still says how it ended, but no event is sent).
   */
  CLOSED_FLOW_SWEEP_SECONDS: z.coerce.number().int().min(0).max(3600).default(10),
  /** A prebuilt workflow bundle (`npm run bundle-workflows`) instead of bundling src/workflows at start-up: a faster start, and the bundle of a given release (the upgrade test runs the previous release's). */
  WORKER_WORKFLOW_BUNDLE: optionalNonEmpty,
  /** The Worker Deployment this worker is a version of (Worker Deployment Versioning; default `merchant-payment-flows`). No dot. */
  WORKER_DEPLOYMENT_NAME: z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'letters, digits, _ and - only (no dot), at most 100').default('merchant-payment-flows'),
  /** This worker's build id: the release's identity (default `<package version>-<commit>`, the commit from MPF_COMMIT or the checkout). */
  WORKER_BUILD_ID: z.string().regex(/^[A-Za-z0-9_.+-]{1,100}$/, 'letters, digits, _ . + - only, at most 100').optional(),
  /** Whether a starting worker makes its version Current: `if-none` (only when the deployment has none; default), `always`, `never`. */
  WORKER_PROMOTE: z.enum(['if-none', 'always', 'never']).default('if-none'),
  /** The commit of this code, for the default build id, where the checkout has no .git (the image's build argument). */
  MPF_COMMIT: z.preprocess((v) => (v === '' ? undefined : v), z.string().regex(/^[0-9a-f]{7,40}$/, 'a git commit hash').optional()),
  /** Payload encryption keys, comma-separated `keyId:base64` 32-byte keys; the first encrypts, all decrypt (rotation); a secret. */
  PAYLOAD_ENCRYPTION_KEYS: optionalNonEmpty,
  /** Bearer token of the codec server (/codec on the gateway); unset = no codec server. */
  CODEC_AUTH_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** Temporal Web origins the codec server answers CORS for. */
  CODEC_CORS_ORIGINS: originList,
  /** `mpf simulator`: base of pay_link when browsers reach the checkout by another address. */
  SIMULATOR_CHECKOUT_PUBLIC_URL: httpUrl.optional(),
  /** `mpf simulator`: non-loopback hosts it may deliver notifications to (e.g. `gateway`). */
  SIMULATOR_NOTIFICATION_ALLOW_HOSTS: hostList,
  /** `mpf simulator`: keep its swaps, links and ledger in this file across restarts (a provider persists); unset: memory only. */
  SIMULATOR_STATE_PATH: optionalNonEmpty,
  /** Wrong PINs a swap accepts before it fails (our cap; the provider publishes none). */
  SWAP_PIN_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  /** After `confirmed`, how long the swap stays open for the provider's notification and records it (0: closes at once). */
  SWAP_NOTIFICATION_WAIT_SECONDS: z.coerce.number().int().min(0).max(86_400).default(DEFAULT_SWAP_NOTIFICATION_WAIT_SECONDS),
  /** A confirmation in doubt waits this long for the provider's notification before needs_reconciliation. */
  SWAP_SETTLE_WAIT_SECONDS: z.coerce.number().int().min(0).max(86_400).default(900),
  /** How long a payment link waits for its payment before it expires. */
  LINK_LIFETIME_SECONDS: z.coerce.number().int().min(1).max(30 * 86_400).default(86_400),
  /** After expiry, how long a link still records a late payment notification (money that arrived is never ignored). */
  LINK_LATE_NOTIFICATION_GRACE_SECONDS: z.coerce.number().int().min(0).max(7 * 86_400).default(3_600),
  /** The log level of every process (pino's levels). */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ...MERCHANT_EVENTS_ENV,
  ...LIMITS_ENV,
  ...PROVIDER_GUARD_ENV,
});
export type AppEnv = z.infer<typeof EnvVariables>;

/**
 * A rule over variables that only a feature knows (merchant events: a signing secret's shape,
 * endpoints need a secret). The feature registers it when its module loads, so config imports no
 * feature; every loadEnv runs the registered rules with the schema's own.
 */
export type EnvCheck = (env: AppEnv, ctx: z.RefinementCtx) => void;
const featureChecks = new Map<string, EnvCheck>();

export function registerEnvCheck(feature: string, check: EnvCheck): void {
  featureChecks.set(feature, check);
}

export const EnvSchema = EnvVariables.superRefine((env, ctx) => {
  for (const check of featureChecks.values()) check(env, ctx);
  if (env.MERCHANT_WEBHOOK_ALLOWED_HOSTS !== undefined) {
    try {
      parseAllowedHosts(env.MERCHANT_WEBHOOK_ALLOWED_HOSTS);
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['MERCHANT_WEBHOOK_ALLOWED_HOSTS'], message: (err as Error).message });
    }
  }
  if (env.MPS_PROVIDER === 'simulator' && env.MPS_BASE_URL) {
    ctx.addIssue({
      code: 'custom',
      path: ['MPS_PROVIDER'],
      message: 'is simulator (the embedded one) but MPS_BASE_URL is set too: unset one of them',
    });
  }
  if (env.MPS_PROVIDER === 'simulator' && env.NODE_ENV === 'production') {
    ctx.addIssue({
      code: 'custom',
      path: ['MPS_PROVIDER'],
      message: 'is simulator, which NODE_ENV=production never runs: set MPS_BASE_URL to the provider (with MPS_LIVE=1 for a non-loopback address) and its credentials',
    });
  }
  checkGatewayOidc(env, ctx);
  if (env.MPS_SIMULATOR_UPSTREAM) checkSimulatorUpstream(env, ctx);
  if (env.MPS_BASE_URL && !isLoopbackUrl(env.MPS_BASE_URL) && !env.MPS_LIVE) {
    ctx.addIssue({
      code: 'custom',
      path: ['MPS_BASE_URL'],
      message:
        'is not a loopback address; set MPS_LIVE=1 to dial the live provider (every call moves real money)',
    });
  }
});

/**
 * A simulator reached through the forwarder: never the live provider's setting (MPS_LIVE=1), and
 * MPS_BASE_URL is where the forwarder listens, a plain-HTTP loopback address.
 */
function checkSimulatorUpstream(env: AppEnv, ctx: z.RefinementCtx): void {
  if (env.MPS_LIVE) {
    ctx.addIssue({
      code: 'custom',
      path: ['MPS_LIVE'],
      message: 'is 1 (the live provider, real money) but MPS_SIMULATOR_UPSTREAM names a simulator: going live sets MPS_BASE_URL to the provider and drops MPS_SIMULATOR_UPSTREAM',
    });
  }
  const base = env.MPS_BASE_URL ? new URL(env.MPS_BASE_URL) : undefined;
  if (!base || base.protocol !== 'http:' || !isLoopbackUrl(base.href)) {
    ctx.addIssue({
      code: 'custom',
      path: ['MPS_SIMULATOR_UPSTREAM'],
      message: 'needs MPS_BASE_URL to be the plain-HTTP loopback address its forwarder listens on (e.g. http://127.0.0.1:8090)',
    });
  }
  if (new URL(env.MPS_SIMULATOR_UPSTREAM as string).pathname !== '/') {
    ctx.addIssue({ code: 'custom', path: ['MPS_SIMULATOR_UPSTREAM'], message: 'must be an origin (scheme, host and port), without a path' });
  }
}

/** People's tokens at the gateway: the issuer and the audience come together, each an IdP URL https off loopback. */
function checkGatewayOidc(env: AppEnv, ctx: z.RefinementCtx): void {
  const issuer = env.GATEWAY_OIDC_ISSUER;
  if (issuer && !env.GATEWAY_OIDC_AUDIENCE) {
    ctx.addIssue({ code: 'custom', path: ['GATEWAY_OIDC_AUDIENCE'], message: "is required with GATEWAY_OIDC_ISSUER: the audience (aud) people's access tokens carry" });
  }
  for (const name of ['GATEWAY_OIDC_AUDIENCE', 'GATEWAY_OIDC_JWKS_URL', 'GATEWAY_OIDC_PERMISSIONS_CLAIM'] as const) {
    if (!issuer && env[name] !== undefined && (name !== 'GATEWAY_OIDC_PERMISSIONS_CLAIM' || env[name] !== 'permissions')) {
      ctx.addIssue({ code: 'custom', path: [name], message: 'is set but GATEWAY_OIDC_ISSUER is not: set the identity provider\'s issuer too, or unset it' });
    }
  }
  for (const name of ['GATEWAY_OIDC_ISSUER', 'GATEWAY_OIDC_JWKS_URL'] as const) {
    const v = env[name];
    if (v === undefined) continue;
    let u: URL | undefined;
    try {
      u = new URL(v);
    } catch {
      ctx.addIssue({ code: 'custom', path: [name], message: 'must be a URL' });
      continue;
    }
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackUrl(v))) {
      ctx.addIssue({ code: 'custom', path: [name], message: 'must be https (plain http only on loopback)' });
    }
  }
}

export function isProduction(env: Pick<AppEnv, 'NODE_ENV'>): boolean {
  return env.NODE_ENV === 'production';
}

/** PAYLOAD_ENCRYPTION_KEYS, required by every process that reads or writes flow payloads. */
export function requireKeys(env: AppEnv): string {
  if (!env.PAYLOAD_ENCRYPTION_KEYS) {
    throw new ConfigError('PAYLOAD_ENCRYPTION_KEYS: is required (comma-separated keyId:base64 32-byte keys; the first encrypts)');
  }
  return env.PAYLOAD_ENCRYPTION_KEYS;
}

/** Which provider the worker calls: a URL (live or a simulator run as its own service), or the embedded simulator. */
export type ProviderChoice = { kind: 'url'; baseUrl: string } | { kind: 'embedded-simulator' };

/**
 * Fails closed: with neither MPS_BASE_URL nor MPS_PROVIDER=simulator there is no provider, and a
 * worker that guessed would "confirm" swaps against a fake while nothing moves money.
 */
export function providerChoice(env: AppEnv): ProviderChoice {
  if (env.MPS_BASE_URL) return { kind: 'url', baseUrl: env.MPS_BASE_URL };
  if (env.MPS_PROVIDER === 'simulator' && !isProduction(env)) return { kind: 'embedded-simulator' };
  throw new ConfigError(
    'MPS_BASE_URL: no provider is configured. Set MPS_BASE_URL to the provider\'s address (a non-loopback one also needs MPS_LIVE=1: every call moves real money) ' +
      'with MPS_SECRET_KEY, MPS_ACCESS_TOKEN and MPS_MERCHANT_REF (or their _FILE variants); ' +
      'or, for development only, MPS_PROVIDER=simulator to embed the local simulator (refused under NODE_ENV=production)',
  );
}

/**
 * One variable as every process reads it: NAME, else the content of the file NAME_FILE names
 * (trimmed); empty is unset. A file that cannot be read is an error naming NAME_FILE, never its content.
 */
export function readVariable(name: string, source: NodeJS.ProcessEnv = process.env): string | undefined {
  const direct = source[name];
  const file = source[`${name}_FILE`];
  if (direct !== undefined && direct !== '') return direct;
  if (!file) return undefined;
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new ConfigError(`${name}_FILE: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** Reads NAME or NAME_FILE for every known variable; NAME wins when both are set. */
export function collectEnv(source: NodeJS.ProcessEnv = process.env): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const key of Object.keys(EnvSchema.shape)) {
    const value = readVariable(key, source);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** A variable of EnvSchema. */
export type EnvName = keyof typeof EnvSchema.shape;

/** The path NAME_FILE names, for a process that watches the file itself (the gateway's keyring). */
export function fileVariable(name: EnvName, source: NodeJS.ProcessEnv = process.env): string | undefined {
  return source[`${name}_FILE`] || undefined;
}

/** Whether NAME itself is set (not only NAME_FILE). */
export function isSetDirectly(name: EnvName, source: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(source[name]);
}

/** Whether the variable is given at all, as NAME or NAME_FILE: when it is not, its default applies. */
export function isGiven(name: EnvName, source: NodeJS.ProcessEnv = process.env): boolean {
  return isSetDirectly(name, source) || fileVariable(name, source) !== undefined;
}

export function loadEnv(source: NodeJS.ProcessEnv = process.env): AppEnv {
  const parsed = EnvSchema.safeParse(collectEnv(source));
  if (!parsed.success) {
    // Name the variable and the rule; never echo the value (it may be a secret).
    // The path's first element is the variable (a list's index adds nothing for the user).
    const msg = parsed.error.issues.map((i) => `${String(i.path[0] ?? '(environment)')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid configuration: ${msg}`);
  }
  return parsed.data;
}
