/**
 * People's access tokens: the identity provider's JWTs (the organisation's Okta, Entra ID,
 * Keycloak, …; node-oidc-provider in `mpf cluster up`), issued for the Temporal API with
 * Temporal's `permissions` claim (`<namespace>:read|write|worker|admin`, `temporal-system:<role>`
 * for the whole cluster). The one place that checks them, shared by the codec server (Temporal
 * Web's passAccessToken) and the gateway's operator routes.
 *
 * A token is checked by jose: its signature against the IdP's JWKS (fetched and cached by jose;
 * the JWKS URL given, or read from the issuer's discovery document), its issuer, audience and
 * lifetime. Fail closed, never a 500:
 *   - malformed, forged (no key of the IdP's signs it), another issuer's, another audience's,
 *     expired, or without a subject -> 401, the message naming which;
 *   - the IdP's discovery document or JWKS cannot be fetched -> 503, the message naming the IdP
 *     (keys fetched in the last 10 minutes keep being used; the tokens are never let through
 *     unchecked).
 * The claims are read before the signature is checked only to refuse sooner (another issuer, an
 * expired token, another audience: no call to the IdP for them); nothing is accepted unverified.
 * No token, and no part of one, is ever logged or echoed: messages name the settings and the
 * subject only.
 *
 * What a verified person may do is decided from the permissions claim by the callers:
 * `grantsOn` (the roles a person holds on a namespace, the cluster-wide ones included),
 * `mayRead` (the codec), `gatewayRoleOf` (the gateway's roles).
 */
import type * as JoseNs from 'jose' with { 'resolution-mode': 'import' };
import type { Role } from './keyring';

type Jose = typeof JoseNs;

export interface PersonTokenSettings {
  /** The IdP's issuer URL (`iss` of its tokens); https, or http on loopback only. */
  issuer: string;
  /** The audience people's access tokens carry (the Temporal API's). */
  audience: string;
  /** The IdP's JWKS; unset = the `jwks_uri` of the issuer's discovery document. https, or http on loopback only. */
  jwksUrl?: string;
  /** The claim listing `<namespace>:<role>` permissions; default `permissions`. */
  permissionsClaim?: string;
  /** How long a fetch of the discovery document or the JWKS may take; default 5 s. */
  timeoutMs?: number;
  /**
   * The keys themselves instead of a URL: the demo console's in-process issuer (its tokens are
   * checked here exactly as an IdP's, only the key set is local). Never set from the environment.
   */
  localJwks?: { keys: Array<Record<string, unknown>> };
  /** The claim naming the console roles a person holds besides their permissions (`finance`, `support`); default `mpf_roles`. */
  rolesClaim?: string;
}

/** A verified person: who (the token's `sub`, and a name when the token carries one) and what they hold. */
export interface PersonIdentity {
  subject: string;
  /** preferred_username, email, upn or name, when the access token carries one. */
  name?: string;
  /** The permissions claim's entries (`<namespace>:<role>`). */
  permissions: string[];
  /** The roles claim's entries (`finance`, `support`), when the token carries one: the console's, on top of the permissions. */
  roles?: string[];
}

export type PersonTokenVerdict =
  | { ok: true; person: PersonIdentity }
  | { ok: false; status: 401; code: 'invalid_token' | 'token_expired'; error: string }
  | { ok: false; status: 503; code: 'identity_provider_unavailable'; error: string };

/** Temporal's roles on a namespace. */
export type TemporalRole = 'read' | 'write' | 'worker' | 'admin';
const TEMPORAL_ROLES: readonly TemporalRole[] = ['read', 'write', 'worker', 'admin'];
/** Temporal's name for the whole cluster in the permissions claim. */
export const SYSTEM_SCOPE = 'temporal-system';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
export const isLoopbackHost = (u: URL): boolean => LOOPBACK.has(u.hostname);

/** A URL the tokens' keys may come from: https, or plain http on loopback only. Throws naming `what`. */
export function checkIdpUrl(value: string, what: string): URL {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new Error(`${what}: ${value.slice(0, 200)} is not a URL`);
  }
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && isLoopbackHost(u))) {
    throw new Error(`${what}: ${u.origin}${u.pathname} must be https (plain http only on loopback)`);
  }
  return u;
}

/** A bearer token shaped like a JWS in compact form (three base64url parts): a person's token, not an API key. */
export function looksLikeJwt(token: string | undefined): token is string {
  return typeof token === 'string' && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}

/** Printable, one line, bounded: a claim value fit for an audit record or a message. */
const printable = (s: string, max: number): string =>
  [...s].filter((c) => { const n = c.codePointAt(0)!; return n >= 0x20 && !(n >= 0x7f && n <= 0x9f); }).join('').trim().slice(0, max);

/** The permissions claim's entries: a JSON array of strings, or one space-separated string. */
function permissionsOf(value: unknown): string[] {
  if (typeof value === 'string') return value.split(/\s+/).filter(Boolean);
  return Array.isArray(value) ? value.filter((p): p is string => typeof p === 'string') : [];
}

/** The Temporal roles `permissions` grant on `namespace`, the cluster-wide ones (`temporal-system:<role>`) included. */
export function grantsOn(permissions: readonly string[], namespace: string | undefined): Set<TemporalRole> {
  const out = new Set<TemporalRole>();
  for (const p of permissions) {
    const i = p.lastIndexOf(':');
    if (i <= 0) continue;
    const scope = p.slice(0, i);
    const role = p.slice(i + 1).toLowerCase() as TemporalRole;
    if (!TEMPORAL_ROLES.includes(role)) continue;
    if (scope === SYSTEM_SCOPE || (namespace !== undefined && scope === namespace)) out.add(role);
  }
  return out;
}

/** Whether a person may read `namespace`'s payloads (the codec): read, write or admin on it, or on the whole cluster. */
export function mayRead(permissions: readonly string[], namespace: string | undefined): boolean {
  if (namespace === undefined) return grantsOn(permissions, undefined).has('admin');
  const g = grantsOn(permissions, namespace);
  return g.has('read') || g.has('write') || g.has('admin');
}

/**
 * The gateway role a person holds on `namespace`: `operator` for admin on it (or
 * `temporal-system:admin`), `read_only` for read or write; none for the worker role alone or no
 * permission. A person never holds `backend`: starting and cancelling flows is the merchant
 * backend's, with its API key.
 */
export function gatewayRoleOf(permissions: readonly string[], namespace: string): Role | undefined {
  const g = grantsOn(permissions, namespace);
  if (g.has('admin')) return 'operator';
  if (g.has('read') || g.has('write')) return 'read_only';
  return undefined;
}

/** How an action is recorded: `person <name> (sub <subject>)`, or `person <subject>` when the token names no one else. */
export function personActor(p: PersonIdentity): string {
  const name = p.name && p.name !== p.subject ? p.name : undefined;
  return (name ? `person ${name} (sub ${p.subject})` : `person ${p.subject}`).slice(0, 100);
}

/** The permissions a person holds, for a message (bounded). */
export function describePermissions(p: PersonIdentity): string {
  if (p.permissions.length === 0) return 'no permissions';
  const shown = p.permissions.slice(0, 8).map((x) => printable(x, 60)).join(', ');
  return p.permissions.length > 8 ? `${shown}, …` : shown;
}

class IdpUnavailable extends Error {
  override name = 'IdpUnavailable';
}

/**
 * The verifier of people's access tokens for one IdP. Construct it at start-up (a URL that is not
 * https off loopback throws); nothing is fetched until a token arrives or `check()` is called.
 */
export class PersonTokens {
  readonly issuer: string;
  readonly audience: string;
  readonly claim: string;
  readonly rolesClaim: string;
  private readonly timeoutMs: number;
  private readonly localJwks?: { keys: Array<Record<string, unknown>> };
  private readonly explicitJwks?: URL;
  private jose?: Promise<Jose>;
  private keys?: Promise<ReturnType<Jose['createRemoteJWKSet']>>;

  constructor(settings: PersonTokenSettings) {
    checkIdpUrl(settings.issuer, 'the identity provider\'s issuer');
    if (!settings.audience) throw new Error('the audience of people\'s access tokens is required');
    this.issuer = settings.issuer;
    this.audience = settings.audience;
    this.claim = settings.permissionsClaim ?? 'permissions';
    this.rolesClaim = settings.rolesClaim ?? 'mpf_roles';
    this.timeoutMs = settings.timeoutMs ?? 5_000;
    if (settings.localJwks) this.localJwks = settings.localJwks;
    if (settings.jwksUrl) this.explicitJwks = checkIdpUrl(settings.jwksUrl, 'the identity provider\'s JWKS URL');
  }

  private loadJose(): Promise<Jose> {
    return (this.jose ??= import('jose') as Promise<Jose>);
  }

  /** The JWKS URL: given, or the discovery document's `jwks_uri` (fetched once it answers; retried while it does not). */
  private async jwksUrl(): Promise<URL> {
    if (this.explicitJwks) return this.explicitJwks;
    const where = `${this.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    let doc: { issuer?: unknown; jwks_uri?: unknown };
    try {
      const res = await fetch(where, { redirect: 'manual', signal: AbortSignal.timeout(this.timeoutMs), headers: { accept: 'application/json' } });
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new IdpUnavailable(`its discovery document (${where}) answered HTTP ${res.status}`);
      }
      doc = (await res.json()) as typeof doc;
    } catch (e) {
      if (e instanceof IdpUnavailable) throw e;
      throw new IdpUnavailable(`its discovery document (${where}) cannot be fetched (${(e as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable'})`);
    }
    // OpenID Connect Discovery 1.0 §4.3: the document's issuer is exactly the one asked for.
    if (doc.issuer !== this.issuer) throw new IdpUnavailable(`its discovery document (${where}) names another issuer than the one configured`);
    if (typeof doc.jwks_uri !== 'string') throw new IdpUnavailable(`its discovery document (${where}) has no jwks_uri`);
    try {
      return checkIdpUrl(doc.jwks_uri, 'jwks_uri of the discovery document');
    } catch (e) {
      throw new IdpUnavailable((e as Error).message);
    }
  }

  private keySet(): Promise<ReturnType<Jose['createRemoteJWKSet']>> {
    const local = this.localJwks;
    const pending = (this.keys ??= local
      ? this.loadJose().then((jose) => Object.assign(jose.createLocalJWKSet(local as JoseNs.JSONWebKeySet), { reload: async () => undefined }) as unknown as ReturnType<Jose['createRemoteJWKSet']>)
      : Promise.all([this.loadJose(), this.jwksUrl()]).then(([jose, url]) => jose.createRemoteJWKSet(url, { timeoutDuration: this.timeoutMs })));
    // A discovery that failed is tried again with the next token.
    pending.catch(() => {
      if (this.keys === pending) this.keys = undefined;
    });
    return pending;
  }

  private unavailable(why: string): PersonTokenVerdict {
    return { ok: false, status: 503, code: 'identity_provider_unavailable', error: `identity_provider_unavailable: people's access tokens cannot be checked now: the identity provider ${this.issuer} is unavailable: ${why}; API keys keep working` };
  }

  /** Whether the IdP's keys can be fetched now (for a start-up notice); undefined when they can, else why not. */
  async check(): Promise<string | undefined> {
    try {
      const keys = await this.keySet();
      await keys.reload();
      return undefined;
    } catch (e) {
      return e instanceof IdpUnavailable ? e.message : `its JWKS cannot be fetched (${(e as Error).name === 'JWKSTimeout' ? 'timed out' : 'unreachable or not a key set'})`;
    }
  }

  /** Verifies a person's access token (see the module comment). Never throws. */
  async verify(token: string): Promise<PersonTokenVerdict> {
    const refuse = (why: string, code: 'invalid_token' | 'token_expired' = 'invalid_token'): PersonTokenVerdict => ({
      ok: false,
      status: 401,
      code,
      error: `unauthorized: the access token is ${why}; sign in again`,
    });
    const jose = await this.loadJose();
    // Refused sooner on its claims alone (nothing is accepted before the signature is checked).
    let claims: JoseNs.JWTPayload;
    try {
      jose.decodeProtectedHeader(token);
      claims = jose.decodeJwt(token);
    } catch {
      return refuse('invalid: not a signed JWT');
    }
    if (claims.iss !== this.issuer) return refuse(`invalid: issued by another identity provider than ${this.issuer}`);
    if (typeof claims.exp === 'number' && claims.exp * 1000 <= Date.now()) return refuse('expired', 'token_expired');
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(this.audience)) return refuse(`invalid: not for audience ${this.audience}`);

    let payload: JoseNs.JWTPayload;
    try {
      const keys = await this.keySet();
      ({ payload } = await jose.jwtVerify(token, keys, { issuer: this.issuer, audience: this.audience, requiredClaims: ['exp', 'sub'] }));
    } catch (e) {
      if (e instanceof IdpUnavailable) return this.unavailable(e.message);
      if (e instanceof jose.errors.JWTExpired) return refuse('expired', 'token_expired');
      if (e instanceof jose.errors.JWKSNoMatchingKey || e instanceof jose.errors.JWSSignatureVerificationFailed || e instanceof jose.errors.JWKSMultipleMatchingKeys) {
        return refuse('not signed by the identity provider');
      }
      if (e instanceof jose.errors.JWKSTimeout) return this.unavailable('its JWKS timed out');
      // A fetch that failed (a network error, not a JOSE one), an answer other than 200, or one that is not a key set.
      if (!(e instanceof jose.errors.JOSEError) || e.code === 'ERR_JOSE_GENERIC' || e instanceof jose.errors.JWKSInvalid) {
        return this.unavailable('its JWKS cannot be fetched');
      }
      if (e instanceof jose.errors.JWTClaimValidationFailed) return refuse(`invalid: its ${printable(e.claim, 40)} claim is not accepted`);
      if (e instanceof jose.errors.JOSEAlgNotAllowed || e instanceof jose.errors.JOSENotSupported) return refuse('invalid: signed with an algorithm the identity provider\'s keys do not allow');
      return refuse('invalid');
    }
    const subject = typeof payload.sub === 'string' ? printable(payload.sub, 80) : '';
    if (!subject) return refuse('invalid: it names no subject (sub)');
    const nameClaim = [payload.preferred_username, payload.email, payload.upn, payload.name].find((v): v is string => typeof v === 'string' && printable(v, 60) !== '');
    const roles = permissionsOf(payload[this.rolesClaim]).map((r) => printable(r, 40)).filter(Boolean).slice(0, 8);
    return { ok: true, person: { subject, ...(nameClaim ? { name: printable(nameClaim, 60) } : {}), permissions: permissionsOf(payload[this.claim]), ...(roles.length ? { roles } : {}) } };
  }
}
