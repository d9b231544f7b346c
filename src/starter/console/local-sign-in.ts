/**
 * The demo's local sign-in: no identity provider runs in `npm run demo`, so the gateway is its own
 * issuer of people's access tokens. It holds an ES256 key made at start (in memory only), signs a
 * short-lived JWT for a person of a chosen role, and hands the gateway the public half as a local
 * key set: the API verifies these tokens through the same PersonTokens path as an IdP's (issuer,
 * audience, signature, lifetime, permissions claim). A person signs in through a one-time link the
 * demo prints (`/console/local-sign-in?code=…`); a used, unknown or expired code signs no one in.
 *
 * Refused outright (the constructor throws) under NODE_ENV=production or MPS_LIVE: it exists for a
 * gateway in front of the embedded simulator only, and the demo is its only caller.
 */
import { generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import type * as JoseNs from 'jose' with { 'resolution-mode': 'import' };
import type { PersonTokenSettings } from '../../auth/person-tokens';
import type { ConsoleRole } from './roles';

export const LOCAL_ISSUER = 'http://127.0.0.1/console/local-issuer';
export const LOCAL_AUDIENCE = 'urn:merchant-payment-flows:console-local';
const TOKEN_SECONDS = 3600;
const LINK_MS = 24 * 3600_000;

const PEOPLE: Record<ConsoleRole, { name: string; permission: 'read' | 'admin'; roles: string[] }> = {
  support: { name: 'Sam Support', permission: 'read', roles: ['support'] },
  finance: { name: 'Fay Finance', permission: 'read', roles: ['finance'] },
  operator: { name: 'Omar Operator', permission: 'admin', roles: [] },
};

export class LocalSignIn {
  private readonly privateKey: KeyObject;
  private readonly jwk: Record<string, unknown>;
  private readonly codes = new Map<string, { role: ConsoleRole; expiresAt: number }>();

  constructor(private readonly namespace: string, env: NodeJS.ProcessEnv = process.env) {
    if (env.NODE_ENV === 'production' || (env.MPS_LIVE !== undefined && env.MPS_LIVE !== '' && env.MPS_LIVE !== '0')) {
      throw new Error("the console's local sign-in is for the demo against the embedded simulator only: it is refused under NODE_ENV=production or MPS_LIVE; sign people in through the identity provider (GATEWAY_OIDC_ISSUER)");
    }
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = privateKey;
    this.jwk = { ...publicKey.export({ format: 'jwk' }), kid: randomBytes(8).toString('hex'), alg: 'ES256', use: 'sig' };
  }

  /** The settings the gateway verifies these tokens with (a local key set, no URL fetched). */
  get tokenSettings(): PersonTokenSettings {
    return { issuer: LOCAL_ISSUER, audience: LOCAL_AUDIENCE, localJwks: { keys: [this.jwk] } };
  }

  /** A one-time sign-in code for a person of `role` (valid 24 hours, or until used). */
  issueCode(role: ConsoleRole): string {
    const code = randomBytes(24).toString('base64url');
    this.codes.set(code, { role, expiresAt: Date.now() + LINK_MS });
    return code;
  }

  /** The role a code signs in as, once; undefined for a used, unknown or expired code. */
  redeem(code: string): ConsoleRole | undefined {
    const entry = this.codes.get(code);
    this.codes.delete(code);
    return entry && entry.expiresAt > Date.now() ? entry.role : undefined;
  }

  /** A signed access token for the demo's person of `role`. */
  async mint(role: ConsoleRole): Promise<{ accessToken: string; expiresAt: number }> {
    const jose = (await import('jose')) as typeof JoseNs;
    const p = PEOPLE[role];
    const now = Math.floor(Date.now() / 1000);
    const accessToken = await new jose.SignJWT({ permissions: [`${this.namespace}:${p.permission}`], mpf_roles: p.roles, name: p.name })
      .setProtectedHeader({ alg: 'ES256', kid: String(this.jwk.kid) })
      .setSubject(`demo-${role}`)
      .setIssuer(LOCAL_ISSUER)
      .setAudience(LOCAL_AUDIENCE)
      .setIssuedAt(now)
      .setExpirationTime(now + TOKEN_SECONDS)
      .sign(this.privateKey);
    return { accessToken, expiresAt: (now + TOKEN_SECONDS) * 1000 };
  }
}
