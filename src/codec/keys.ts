/**
 * The payload key ring: parses PAYLOAD_ENCRYPTION_KEYS, a comma-separated list of
 * `keyId:base64key` entries (each key 32 bytes, AES-256). The FIRST entry is the active key,
 * used for every new encryption; every entry is accepted for decryption, so keys can rotate:
 * prepend the new key, keep the old ones until no history needs them.
 *
 * Errors name PAYLOAD_ENCRYPTION_KEYS and the offending key id, never the key material.
 */
import { randomBytes } from 'node:crypto';
import { ConfigError } from '../config/env';

export const KEYS_ENV = 'PAYLOAD_ENCRYPTION_KEYS';
export const KEY_LENGTH_BYTES = 32;
/** Key ids travel in payload metadata and inside sealed strings (`sealed:v1:<keyId>:…`): no ':' or ','. */
export const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64_PATTERN = /^(?:[A-Za-z0-9+/]+={0,2}|[A-Za-z0-9_-]+={0,2})$/;

export interface KeyRing {
  /** Id of the key used for new encryptions (the first entry). */
  readonly activeKeyId: string;
  /** Every known key by id, the active one included. */
  readonly keys: ReadonlyMap<string, Buffer>;
}

/** Parses PAYLOAD_ENCRYPTION_KEYS; throws a ConfigError naming the variable and the bad entry's key id. */
export function parseEncryptionKeys(raw: string | undefined): KeyRing {
  if (raw === undefined || raw.trim() === '') {
    throw new ConfigError(`${KEYS_ENV}: is empty; expected a comma-separated list of keyId:base64key (32-byte keys)`);
  }
  const keys = new Map<string, Buffer>();
  let activeKeyId: string | undefined;
  const entries = raw.split(',').map((e) => e.trim());
  entries.forEach((entry, index) => {
    const where = `entry ${index + 1}`;
    if (entry === '') throw new ConfigError(`${KEYS_ENV}: ${where} is empty`);
    const colon = entry.indexOf(':');
    if (colon < 0) {
      throw new ConfigError(`${KEYS_ENV}: ${where} is not of the form keyId:base64key`);
    }
    const keyId = entry.slice(0, colon).trim();
    const material = entry.slice(colon + 1).trim();
    if (!KEY_ID_PATTERN.test(keyId)) {
      throw new ConfigError(
        `${KEYS_ENV}: ${where} has an invalid key id (1-64 characters of A-Z a-z 0-9 . _ -)`,
      );
    }
    if (keys.has(keyId)) throw new ConfigError(`${KEYS_ENV}: key id "${keyId}" appears more than once`);
    if (!BASE64_PATTERN.test(material)) {
      throw new ConfigError(`${KEYS_ENV}: key "${keyId}" is not valid base64`);
    }
    const key = Buffer.from(material, material.includes('-') || material.includes('_') ? 'base64url' : 'base64');
    if (key.length !== KEY_LENGTH_BYTES) {
      throw new ConfigError(
        `${KEYS_ENV}: key "${keyId}" decodes to ${key.length} bytes; AES-256 needs exactly ${KEY_LENGTH_BYTES}`,
      );
    }
    keys.set(keyId, key);
    activeKeyId ??= keyId;
  });
  return { activeKeyId: activeKeyId as string, keys };
}

/** Accepts either the raw PAYLOAD_ENCRYPTION_KEYS string or an already-parsed ring. */
export function toKeyRing(keys: string | KeyRing): KeyRing {
  return typeof keys === 'string' ? parseEncryptionKeys(keys) : keys;
}

/**
 * A fresh random PAYLOAD_ENCRYPTION_KEYS value with one key, for the embedded demo and tests.
 * Never use it for a deployment whose history must outlive the process.
 */
export function generateDevKeys(keyId = `dev-${randomBytes(4).toString('hex')}`): string {
  if (!KEY_ID_PATTERN.test(keyId)) throw new ConfigError(`${KEYS_ENV}: invalid key id for a generated key`);
  return `${keyId}:${randomBytes(KEY_LENGTH_BYTES).toString('base64')}`;
}
