/**
 * Edits of a keyring file (GATEWAY_API_KEYS_FILE) the way running gateways can take them: the
 * file is read and checked with the gateway's own rules, changed, and replaced at once (written
 * beside it with mode 0600, flushed, renamed over it), so a gateway re-reading it never sees half
 * a file. Concurrent edits are serialised by a lock file (`<file>.lock`, O_EXCL); a lock older
 * than STALE_LOCK_MS (its editor died) is taken over.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { type KeyEntry, KeyringError, newKey, parseKeyring, type Role } from './keyring';

const STALE_LOCK_MS = 30_000;
const LOCK_WAIT_MS = 5_000;

export function readKeyringFile(file: string): KeyEntry[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new KeyringError(`${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parseKeyring(text, file);
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function lock(file: string): () => void {
  const lockFile = `${file}.lock`;
  const until = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      fs.closeSync(fs.openSync(lockFile, 'wx', 0o600));
      return () => fs.rmSync(lockFile, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new KeyringError(`${lockFile}: cannot create the lock (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
      const age = Date.now() - (fs.statSync(lockFile, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > STALE_LOCK_MS) fs.rmSync(lockFile, { force: true });
      else if (Date.now() > until) throw new KeyringError(`${file}: another edit holds ${lockFile}; try again (or remove it if no edit runs)`);
      else sleep(50);
    }
  }
}

/** Reads the keyring, applies `change`, and replaces the file at once (mode 0600). Answers what `change` answered. */
export function editKeyringFile<T>(file: string, change: (entries: KeyEntry[]) => { entries: KeyEntry[]; result: T }): T {
  const unlock = lock(file);
  try {
    const { entries, result } = change(readKeyringFile(file));
    const text = `${JSON.stringify(parseKeyring(JSON.stringify(entries), 'the edited keyring'), null, 2)}\n`;
    const next = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.next`);
    const fd = fs.openSync(next, 'w', 0o600);
    try {
      fs.writeFileSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(next, file);
    return result;
  } finally {
    unlock();
  }
}

/** A new key's id when none is given: `<role>-<6 hex>` (read-only-3fa2c1). */
export function defaultKeyId(role: Role): string {
  return `${role.replace('_', '-')}-${randomBytes(3).toString('hex')}`;
}

/** Writes a new key to its own file, mode 0600, refusing to overwrite one. */
export function writeKeyFile(file: string, key: string): void {
  try {
    fs.writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new KeyringError(`${file}: exists already; a key file is never overwritten`);
    throw e;
  }
}

/** Adds a new key of `role`; answers the key (shown once) and its entry. */
export function addKey(file: string, opts: { id: string; role: Role; label?: string; expires_at?: string }): { key: string; entry: KeyEntry } {
  return editKeyringFile(file, (entries) => {
    if (entries.some((e) => e.id === opts.id)) throw new KeyringError(`${file}: a key with id ${opts.id} exists already`);
    const made = newKey(opts);
    return { entries: [...entries, made.entry], result: made };
  });
}

/** Removes the key `id`; every gateway refuses it once it re-reads the file (within a second). */
export function revokeKey(file: string, id: string): KeyEntry {
  return editKeyringFile(file, (entries) => {
    const gone = entries.find((e) => e.id === id);
    if (!gone) throw new KeyringError(`${file}: no key with id ${id} (mpf keys list)`);
    return { entries: entries.filter((e) => e.id !== id), result: gone };
  });
}

/**
 * Rotates the key `id`: a new key of the same role and label under `newId` (default
 * defaultKeyId), and the old one set to expire after `overlapMs` (0: at once), so its holder can
 * switch without a failed request.
 */
export function rotateKey(file: string, id: string, newIdGiven: string | undefined, overlapMs: number, now = Date.now()): { key: string; entry: KeyEntry; old: KeyEntry } {
  return editKeyringFile(file, (entries) => {
    const old = entries.find((e) => e.id === id);
    if (!old) throw new KeyringError(`${file}: no key with id ${id} (mpf keys list)`);
    const newId = newIdGiven ?? defaultKeyId(old.role);
    if (entries.some((e) => e.id === newId)) throw new KeyringError(`${file}: a key with id ${newId} exists already`);
    const made = newKey({ id: newId, role: old.role, ...(old.label ? { label: old.label } : {}) });
    const expires = new Date(now + overlapMs).toISOString();
    const ending: KeyEntry = { ...old, expires_at: old.expires_at && Date.parse(old.expires_at) < now + overlapMs ? old.expires_at : expires };
    return { entries: [...entries.map((e) => (e.id === id ? ending : e)), made.entry], result: { ...made, old: ending } };
  });
}
