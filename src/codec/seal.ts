/**
 * Field-level sealing of secrets that pass through workflows (the wallet PIN, the provider's
 * auth_token). Payload encryption protects history at rest; sealing additionally keeps these
 * values opaque to an operator who decodes payloads through the codec server in Temporal Web.
 * Only the worker's activities (which hold PAYLOAD_ENCRYPTION_KEYS) unseal.
 *
 * Format: `sealed:v1:<keyId>:<base64url(iv | ciphertext | tag)>`, AES-256-GCM with a 12-byte
 * random IV and a key derived by HKDF-SHA256 (empty salt, info 'mpf-seal-v1') from the payload
 * key `keyId`. The prefix `sealed:v1:<keyId>` is authenticated as AAD. Sealing uses the active key;
 * unsealing accepts every key of the ring. Errors never echo the value.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deriveKeys } from './derive';
import { KEYS_ENV, type KeyRing, toKeyRing } from './keys';
import { SEALED_PREFIX } from './sealed-prefix';

export interface Sealer {
  seal(plain: string): string;
  unseal(sealed: string): string;
}

export { SEALED_PREFIX };
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEALED_PATTERN = /^sealed:v1:([A-Za-z0-9._-]{1,64}):([A-Za-z0-9_-]+)$/;

export class SealError extends Error {
  override name = 'SealError';
}

/** True when the value looks like the output of Sealer.seal (no key needed). */
export function isSealed(value: unknown): value is string {
  return typeof value === 'string' && SEALED_PATTERN.test(value);
}

export function createSealer(keys: string | KeyRing): Sealer {
  const ring = toKeyRing(keys);
  const sealKeys = deriveKeys(ring, 'seal').keys;
  const activeId = ring.activeKeyId;

  return {
    seal(plain: string): string {
      if (typeof plain !== 'string') throw new SealError('seal: expected a string');
      const prefix = `${SEALED_PREFIX}${activeId}`;
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', sealKeys.get(activeId) as Buffer, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(Buffer.from(prefix, 'utf8'));
      const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return `${prefix}:${Buffer.concat([iv, ct, cipher.getAuthTag()]).toString('base64url')}`;
    },

    unseal(sealed: string): string {
      const m = typeof sealed === 'string' ? SEALED_PATTERN.exec(sealed) : null;
      if (!m) throw new SealError('unseal: value is not a sealed:v1 string');
      const keyId = m[1] as string;
      const key = sealKeys.get(keyId);
      if (!key) {
        throw new SealError(`unseal: sealed with key id "${keyId}", which is not in ${KEYS_ENV}`);
      }
      const raw = Buffer.from(m[2] as string, 'base64url');
      if (raw.length < IV_BYTES + TAG_BYTES) throw new SealError('unseal: sealed value is truncated');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
        decipher.setAAD(Buffer.from(`${SEALED_PREFIX}${keyId}`, 'utf8'));
        decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
        return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString(
          'utf8',
        );
      } catch {
        throw new SealError(`unseal: sealed value (key id "${keyId}") failed authentication: altered or wrong key`);
      }
    },
  };
}

/**
 * The notification_url handed to the provider ends in a per-flow token. In workflow input it is
 * kept with that last path segment sealed, so an operator decoding payloads in Temporal Web never
 * sees the token; the activity opens it right before the provider call.
 */
export function sealUrlLastSegment(url: string, sealer: Sealer): string {
  const u = new URL(url);
  const parts = u.pathname.split('/');
  const last = parts.pop() ?? '';
  if (!last || isSealed(last)) return url;
  u.pathname = [...parts, sealer.seal(last)].join('/');
  return u.toString();
}

/** The inverse of sealUrlLastSegment; a URL whose last segment is not sealed is returned as is. */
export function unsealUrlLastSegment(url: string, sealer: Sealer): string {
  const u = new URL(url);
  const parts = u.pathname.split('/');
  const last = decodeURIComponent(parts.pop() ?? '');
  if (!isSealed(last)) return url;
  u.pathname = [...parts, sealer.unseal(last)].join('/');
  return u.toString();
}
