/**
 * Checking a presented secret (API key, Bearer token, per-flow token) against the expected one:
 * the one place for it, shared by the gateway, the codec server and the simulator. Comparisons
 * are constant-time over SHA-256 digests, so neither a secret's length nor its prefix leaks
 * through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** The SHA-256 digest a secret is compared by (compute the expected one once). */
export const secretDigest = (secret: string): Buffer => createHash('sha256').update(secret, 'utf8').digest();

/** True when `presented` is the secret whose digest is `expected`; an absent or empty one never is. */
export function secretMatches(presented: string | undefined, expected: Buffer): boolean {
  const same = timingSafeEqual(secretDigest(presented ?? ''), expected);
  return same && presented !== undefined && presented !== '';
}

/** The token of an `Authorization: Bearer <token>` header value, or undefined when absent or malformed. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  return m ? m[1] : undefined;
}
