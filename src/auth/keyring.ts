/**
 * The gateway's API keys: a keyring, not a key. Each entry has a public id (what logs, metrics,
 * audit records and events name), an optional label, a role, an optional expiry, and the SHA-256
 * of the key: the gateway never holds a key in plaintext. The keys are 256-bit random strings
 * (`mpf keys new`), not passwords, so a plain SHA-256 is as strong as a slow hash here and keeps
 * every request's check cheap; presented keys are compared in constant time.
 *
 * Roles, deny by default: `read_only` reads (GETs and lists); `backend` also starts and cancels
 * flows; `operator` also uses /v1/admin/* (declares that money moved). A route states the access
 * it needs; a route that states none is refused.
 *
 * Format (GATEWAY_API_KEYS_FILE, reloaded when it changes; or GATEWAY_API_KEYS): a JSON array of
 *   { "id": "shop-backend-2026", "role": "backend", "sha256": "<64 hex>", "label": "…", "expires_at": "2027-01-01T00:00:00Z" }
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';

export const ROLES = ['read_only', 'backend', 'operator'] as const;
export type Role = (typeof ROLES)[number];
/** What a route needs: to read, to start or cancel (write), or the admin routes. */
export type Access = 'read' | 'write' | 'admin';

export const ROLE_ACCESS: Readonly<Record<Role, readonly Access[]>> = {
  read_only: ['read'],
  backend: ['read', 'write'],
  operator: ['read', 'write', 'admin'],
};
/** The least role that has an access (named in a 403). */
export const ROLE_FOR: Readonly<Record<Access, Role>> = { read: 'read_only', write: 'backend', admin: 'operator' };

export interface KeyEntry {
  id: string;
  label?: string;
  role: Role;
  /** ISO time after which the key is refused (401 key_expired). */
  expires_at?: string;
  /** SHA-256 of the key, hex. */
  sha256: string;
}

/** The public identity of the key a request used (never the secret). */
export interface KeyIdentity {
  id: string;
  label?: string;
  role: Role;
}

export class KeyringError extends Error {
  override name = 'KeyringError';
}

/** The id of the key GATEWAY_API_KEY stands for (one key of role operator, as before keyrings). */
export const LEGACY_KEY_ID = 'gateway-api-key';
const ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
const HEX64 = /^[0-9a-f]{64}$/;
export const MIN_KEY_LENGTH = 16;

export const keyDigest = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

/** Parses and checks a keyring (JSON array); an error names the entry (its id, else its place), never a secret. */
export function parseKeyring(text: string, source: string): KeyEntry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new KeyringError(`${source}: is not JSON (a JSON array of {id, role, sha256, label?, expires_at?})`);
  }
  if (!Array.isArray(raw)) throw new KeyringError(`${source}: must be a JSON array of {id, role, sha256, label?, expires_at?}`);
  const seen = new Set<string>();
  return raw.map((e: unknown, i) => {
    const o = (e && typeof e === 'object' ? e : {}) as Record<string, unknown>;
    const name = typeof o.id === 'string' && ID.test(o.id) ? `entry ${o.id}` : `entry #${i + 1}`;
    const bad = (rule: string): never => {
      throw new KeyringError(`${source}: ${name}: ${rule}`);
    };
    if (typeof o.id !== 'string' || !ID.test(o.id)) bad('id must be 1-64 letters, digits, . _ - (starting with a letter or digit)');
    if (seen.has(o.id as string)) bad('the id is used by another entry: ids must be unique');
    seen.add(o.id as string);
    if (!ROLES.includes(o.role as Role)) bad(`role must be one of ${ROLES.join(', ')}`);
    if ('key' in o || 'secret' in o) bad('holds a key in plaintext: keep only its sha256 (mpf keys new prints the entry)');
    if (typeof o.sha256 !== 'string' || !HEX64.test(o.sha256)) bad('sha256 must be the 64 hex digits of the key\'s SHA-256');
    if (o.label !== undefined && (typeof o.label !== 'string' || o.label.length > 100 || /[\n\r]/.test(o.label))) bad('label must be one line of at most 100 characters');
    if (o.expires_at !== undefined && (typeof o.expires_at !== 'string' || Number.isNaN(Date.parse(o.expires_at)))) bad('expires_at must be an ISO 8601 time');
    const extra = Object.keys(o).find((k) => !['id', 'label', 'role', 'expires_at', 'sha256'].includes(k));
    if (extra) bad(`${extra.slice(0, 40)} is not a field of an entry (id, label, role, expires_at, sha256)`);
    return { id: o.id, role: o.role, sha256: o.sha256, ...(o.label ? { label: o.label } : {}), ...(o.expires_at ? { expires_at: o.expires_at } : {}) } as KeyEntry;
  });
}

/** The entry of the single legacy key (GATEWAY_API_KEY): role operator, every right. */
export function legacyEntry(apiKey: string): KeyEntry {
  if (apiKey.length < MIN_KEY_LENGTH) throw new KeyringError(`GATEWAY_API_KEY: must be at least ${MIN_KEY_LENGTH} characters`);
  return { id: LEGACY_KEY_ID, label: 'GATEWAY_API_KEY', role: 'operator', sha256: keyDigest(apiKey) };
}

/** A new random key (256 bits, `<prefix>…`, default `mpfk_`) and its SHA-256 digest (hex), the only part of it ever kept. */
export function generateKey(prefix = 'mpfk_'): { key: string; sha256: string } {
  const key = `${prefix}${randomBytes(32).toString('base64url')}`;
  return { key, sha256: keyDigest(key) };
}

/** A new random key (256 bits) and the keyring entry that stands for it. */
export function newKey(opts: { id: string; role: Role; label?: string; expires_at?: string }): { key: string; entry: KeyEntry } {
  const { key, sha256 } = generateKey();
  const entry: KeyEntry = { id: opts.id, role: opts.role, sha256, ...(opts.label ? { label: opts.label } : {}), ...(opts.expires_at ? { expires_at: opts.expires_at } : {}) };
  parseKeyring(JSON.stringify([entry]), 'the new entry'); // the same checks as the gateway's
  return { key, entry };
}

export type KeyVerdict = { kind: 'ok'; key: KeyIdentity } | { kind: 'expired'; key: KeyIdentity } | { kind: 'unknown' };

export class Keyring {
  private readonly digests: { entry: KeyEntry; digest: Buffer }[];

  constructor(readonly entries: readonly KeyEntry[]) {
    this.digests = entries.map((entry) => ({ entry, digest: Buffer.from(entry.sha256, 'hex') }));
  }

  /** Which entry a presented key is (every entry compared, in constant time), and whether it is still valid. */
  check(presented: string, nowMs = Date.now()): KeyVerdict {
    const digest = createHash('sha256').update(presented, 'utf8').digest();
    let found: KeyEntry | undefined;
    for (const d of this.digests) if (timingSafeEqual(d.digest, digest)) found = d.entry;
    if (!found) return { kind: 'unknown' };
    const key: KeyIdentity = { id: found.id, role: found.role, ...(found.label ? { label: found.label } : {}) };
    if (found.expires_at && Date.parse(found.expires_at) <= nowMs) return { kind: 'expired', key };
    return { kind: 'ok', key };
  }
}

/**
 * Where the keyring comes from: the file (re-read when it changes, checked every `pollMs`; a
 * change that does not parse keeps the last good keyring and is reported), plus the variable's
 * entries and the legacy key.
 */
export class KeyringSource {
  private ring: Keyring;
  private watching = false;

  constructor(
    private readonly opts: { file?: string; json?: string; legacyKey?: string; pollMs?: number; onReload?: (r: { ok: boolean; message: string }) => void },
  ) {
    this.ring = new Keyring(this.load());
    if (this.ring.entries.length === 0) {
      throw new KeyringError('GATEWAY_API_KEYS_FILE / GATEWAY_API_KEYS / GATEWAY_API_KEY: no API key is configured: the gateway would refuse every backend request');
    }
    if (opts.file) {
      fs.watchFile(opts.file, { interval: opts.pollMs ?? 500, persistent: false }, () => this.reload());
      this.watching = true;
    }
  }

  private load(): KeyEntry[] {
    const entries = [
      ...(this.opts.file ? parseKeyring(readOrThrow(this.opts.file), `GATEWAY_API_KEYS_FILE (${this.opts.file})`) : []),
      ...(this.opts.json ? parseKeyring(this.opts.json, 'GATEWAY_API_KEYS') : []),
      ...(this.opts.legacyKey ? [legacyEntry(this.opts.legacyKey)] : []),
    ];
    const ids = new Set<string>();
    for (const e of entries) {
      if (ids.has(e.id)) throw new KeyringError(`entry ${e.id}: the id is used by another entry (file, variable or GATEWAY_API_KEY): ids must be unique`);
      ids.add(e.id);
    }
    return entries;
  }

  /** Re-reads the keyring; a bad one is refused and the last good one kept. */
  reload(): void {
    try {
      const entries = this.load();
      this.ring = new Keyring(entries);
      this.opts.onReload?.({ ok: true, message: `keyring reloaded: ${entries.length} key(s): ${entries.map((e) => `${e.id} (${e.role})`).join(', ')}` });
    } catch (err) {
      this.opts.onReload?.({ ok: false, message: `keyring NOT reloaded, the last good one stays: ${(err as Error).message}` });
    }
  }

  get current(): Keyring {
    return this.ring;
  }

  close(): void {
    if (this.watching && this.opts.file) fs.unwatchFile(this.opts.file);
    this.watching = false;
  }
}

function readOrThrow(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new KeyringError(`GATEWAY_API_KEYS_FILE: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}
