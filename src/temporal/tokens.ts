/**
 * Access tokens for the Temporal API, for a process that is a machine client of the organisation's
 * identity provider (OAuth 2.0 client credentials): the worker and the gateway. With
 * TEMPORAL_OIDC_ISSUER, TEMPORAL_OIDC_CLIENT_ID and TEMPORAL_OIDC_CLIENT_SECRET set, the first
 * token is fetched before the process connects (an IdP that cannot be reached, or that refuses the
 * client, stops the process with a message naming the setting: it never connects without one), and
 * a new one is fetched when three quarters of a token's lifetime have passed, and handed to the
 * connection without a restart. A renewal that fails is tried again (1 s, doubling to 30 s) while
 * the current token lasts; the server refuses calls once it has expired, never lets them through.
 *
 * The protocol is openid-client's (discovery, client authentication, the token request and its
 * checks), a certified relying-party library; what is ours is only when to renew.
 */
import { ConfigError } from '../config/env';
import type * as OpenIdClientNs from 'openid-client' with { 'resolution-mode': 'import' };

type OpenIdClient = typeof OpenIdClientNs;

export interface TokenSettings {
  /** The IdP's issuer URL (its discovery document at /.well-known/openid-configuration). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The resource (RFC 8707 audience) the tokens are for, when the IdP needs it named. */
  audience?: string;
  /** Space-separated scopes to ask for, when the IdP needs some (Entra ID: `api://…/.default`). */
  scope?: string;
}

export interface RenewingToken {
  /** The current access token. */
  current(): string;
  /** Called with each new token (the worker's native connection is told this way). */
  onRenew(listener: (token: string) => void | Promise<void>): void;
  /** When the current token expires (ms since the epoch). */
  expiresAt(): number;
  stop(): void;
}

/** Renew at three quarters of a token's lifetime; never sooner than 1 s apart. */
const RENEW_AT = 0.75;
const RETRY_MIN_MS = 1_000;
const RETRY_MAX_MS = 30_000;

const isLoopback = (u: URL) => ['127.0.0.1', 'localhost', '[::1]', '::1'].includes(u.hostname);

/** The openid-client configuration of this client: discovered once, http only on loopback. */
async function discover(s: TokenSettings): Promise<{ oidc: OpenIdClient; config: Awaited<ReturnType<OpenIdClient['discovery']>> }> {
  const oidc = (await import('openid-client')) as OpenIdClient;
  let issuer: URL;
  try {
    issuer = new URL(s.issuer);
  } catch {
    throw new ConfigError(`TEMPORAL_OIDC_ISSUER: ${s.issuer} is not a URL; it must be the identity provider's issuer URL`);
  }
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && isLoopback(issuer))) {
    throw new ConfigError(`TEMPORAL_OIDC_ISSUER: ${s.issuer} must be https (plain http only on loopback)`);
  }
  try {
    const config = await oidc.discovery(issuer, s.clientId, undefined, oidc.ClientSecretBasic(s.clientSecret), {
      ...(issuer.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
      timeout: 10,
    });
    return { oidc, config };
  } catch (e) {
    throw new ConfigError(`TEMPORAL_OIDC_ISSUER: cannot reach the identity provider at ${s.issuer} (${(e as Error).message}); this process gets no token to call Temporal with and does not start: start the IdP or fix the setting`);
  }
}

/**
 * No answer from the IdP at all (refused, reset, timed out, DNS): what happened (an error code, or
 * "timed out", "no answer"), or undefined when the IdP did answer (a refusal, whatever its words).
 * Read along the error's `cause` chain, where fetch and openid-client put the socket's error.
 */
export function idpNoAnswer(e: unknown): string | undefined {
  const codes: string[] = [];
  for (let x: unknown = e, i = 0; x && i < 5; x = (x as { cause?: unknown }).cause, i++) {
    const c = x as { code?: unknown; name?: unknown };
    if (typeof c.code === 'string') codes.push(c.code);
    if (c.name === 'TimeoutError' || c.name === 'AbortError') codes.push('timed out');
  }
  const code = codes.find((c) => /^(E[A-Z_]+|UND_ERR_\w+|timed out)$/.test(c));
  if (code) return code;
  return e instanceof TypeError && /fetch failed/.test(e.message) ? 'no answer' : undefined;
}

/** One token from the IdP; a refusal names the client and what the IdP said. */
async function fetchToken(s: TokenSettings, d: Awaited<ReturnType<typeof discover>>): Promise<{ token: string; expiresAt: number }> {
  const params: Record<string, string> = {};
  if (s.audience) params.resource = s.audience;
  if (s.scope) params.scope = s.scope;
  let res: Awaited<ReturnType<OpenIdClient['clientCredentialsGrant']>>;
  try {
    res = await d.oidc.clientCredentialsGrant(d.config, params);
  } catch (e) {
    const err = e as Error & { error?: string; error_description?: string; cause?: unknown };
    // The IdP did not answer at all, which no client setting fixes.
    const noAnswer = err.error ? undefined : idpNoAnswer(e);
    if (noAnswer) throw new ConfigError(`cannot reach the identity provider at ${s.issuer} for a token of client ${s.clientId} (${noAnswer}: ${err.message})`);
    // An answer that refuses: the OAuth error is on the error or, for a 401 with a challenge, on the challenge (openid-client's cause).
    const challenge = Array.isArray(err.cause) ? (err.cause as Array<{ parameters?: { error?: string; error_description?: string } }>)[0]?.parameters : undefined;
    const code = err.error ?? challenge?.error;
    const description = err.error_description ?? challenge?.error_description;
    const said = code ? `${code}${description ? `: ${description}` : ''}` : err.message;
    throw new ConfigError(`the identity provider at ${s.issuer} refused a token to client ${s.clientId} (${said}): check TEMPORAL_OIDC_CLIENT_ID and TEMPORAL_OIDC_CLIENT_SECRET`);
  }
  const lifetime = res.expiresIn() ?? 300;
  return { token: res.access_token, expiresAt: Date.now() + lifetime * 1000 };
}

/**
 * Fetches the first token (or throws a ConfigError naming the setting), then keeps renewing it.
 * `log` hears each renewal and each failed attempt (never a token).
 */
export async function renewingToken(s: TokenSettings, log: (line: string) => void = () => undefined): Promise<RenewingToken> {
  const d = await discover(s);
  let { token, expiresAt } = await fetchToken(s, d);
  const listeners: Array<(t: string) => void | Promise<void>> = [];
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void renew(), Math.max(ms, RETRY_MIN_MS));
    timer.unref();
  };
  const untilRenewal = () => (expiresAt - Date.now()) * RENEW_AT;
  let retryMs = RETRY_MIN_MS;
  const renew = async (): Promise<void> => {
    try {
      ({ token, expiresAt } = await fetchToken(s, d));
      retryMs = RETRY_MIN_MS;
      for (const l of listeners) await l(token);
      log(`temporal token: renewed for client ${s.clientId}, valid until ${new Date(expiresAt).toISOString()}`);
      schedule(untilRenewal());
    } catch (e) {
      const left = Math.round((expiresAt - Date.now()) / 1000);
      log(`temporal token: renewal failed (${(e as Error).message}); trying again in ${retryMs / 1000} s, the current token ${left > 0 ? `lasts ${left} s more` : 'has expired: Temporal refuses this process until a renewal succeeds'}`);
      schedule(retryMs);
      retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
    }
  };
  schedule(untilRenewal());
  return {
    current: () => token,
    onRenew: (l) => void listeners.push(l),
    expiresAt: () => expiresAt,
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** The token settings of the environment, when TEMPORAL_OIDC_ISSUER is set; all three or none. */
export function tokenSettingsFromEnv(env: {
  TEMPORAL_OIDC_ISSUER?: string | undefined;
  TEMPORAL_OIDC_CLIENT_ID?: string | undefined;
  TEMPORAL_OIDC_CLIENT_SECRET?: string | undefined;
  TEMPORAL_OIDC_AUDIENCE?: string | undefined;
  TEMPORAL_OIDC_SCOPE?: string | undefined;
}): TokenSettings | undefined {
  const { TEMPORAL_OIDC_ISSUER: issuer, TEMPORAL_OIDC_CLIENT_ID: clientId, TEMPORAL_OIDC_CLIENT_SECRET: clientSecret } = env;
  if (!issuer && !clientId && !clientSecret) return undefined;
  const missing = [['TEMPORAL_OIDC_ISSUER', issuer], ['TEMPORAL_OIDC_CLIENT_ID', clientId], ['TEMPORAL_OIDC_CLIENT_SECRET', clientSecret]].filter(([, v]) => !v).map(([n]) => n);
  if (missing.length) throw new ConfigError(`${missing.join(', ')}: not set; a client of the identity provider needs TEMPORAL_OIDC_ISSUER, TEMPORAL_OIDC_CLIENT_ID and TEMPORAL_OIDC_CLIENT_SECRET (or its _FILE)`);
  return {
    issuer: issuer!, clientId: clientId!, clientSecret: clientSecret!,
    ...(env.TEMPORAL_OIDC_AUDIENCE ? { audience: env.TEMPORAL_OIDC_AUDIENCE } : {}),
    ...(env.TEMPORAL_OIDC_SCOPE ? { scope: env.TEMPORAL_OIDC_SCOPE } : {}),
  };
}
