/**
 * The topology's secrets, generated for each run and written as compose's secret files are:
 * one file per secret under <state dir>/secrets (directory 0700, files 0600), read by the apps
 * through NAME_FILE. They are never printed. A run that keeps its data (--keep-data) keeps its
 * secrets too: the database's password and the payload key of the flows it holds.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { addKey, writeKeyFile } from '../../src/auth/keyring-file';
import { API_KEYS, KEYRING_FILE, SECRET_FILES, type SecretName } from './topology';

export type Secrets = Record<SecretName, string>;

const hex = (n: number) => randomBytes(n).toString('hex');

export function generateSecrets(): Secrets {
  return {
    postgres_password: hex(24),
    // keyId:base64(32 bytes); the first key of the list encrypts.
    payload_encryption_keys: `k1:${randomBytes(32).toString('base64')}`,
    mps_secret_key: hex(24),
    mps_access_token: hex(24),
    codec_auth_token: hex(24),
  };
}

export function secretsDir(stateDir: string): string {
  return path.join(stateDir, 'secrets');
}

function readSecrets(dir: string): Secrets | undefined {
  const out: Partial<Secrets> = {};
  for (const [name, file] of Object.entries(SECRET_FILES) as Array<[SecretName, string]>) {
    try {
      out[name] = fs.readFileSync(path.join(dir, file), 'utf8').trim();
    } catch {
      return undefined;
    }
    if (!out[name]) return undefined;
  }
  return out as Secrets;
}

/**
 * The gateways' keyring and one key per role (API_KEYS), each key in its own 0600 file beside it,
 * made as compose's `api-keys` job makes them (addKey, writeKeyFile). With `reuse` a complete set
 * is kept (keys revoked or rotated since stay so); anything less is made anew.
 */
export function prepareApiKeys(dir: string, reuse: boolean): void {
  const files = [KEYRING_FILE, ...API_KEYS.map((k) => k.file)].map((f) => path.join(dir, f));
  if (reuse && files.every((f) => fs.existsSync(f))) return;
  for (const f of files) fs.rmSync(f, { force: true });
  for (const k of API_KEYS) {
    const { key } = addKey(path.join(dir, KEYRING_FILE), { id: k.id, role: k.role, label: k.label });
    writeKeyFile(path.join(dir, k.file), key);
  }
}

/** Writes (or, with `reuse`, keeps the existing) secret files; returns the secrets. */
export function prepareSecrets(stateDir: string, reuse: boolean): Secrets {
  const dir = secretsDir(stateDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  prepareApiKeys(dir, reuse);
  const existing = reuse ? readSecrets(dir) : undefined;
  if (existing) return existing;
  const secrets = generateSecrets();
  for (const [name, file] of Object.entries(SECRET_FILES) as Array<[SecretName, string]>) {
    const p = path.join(dir, file);
    fs.rmSync(p, { force: true });
    fs.writeFileSync(p, `${secrets[name]}\n`, { mode: 0o600, flag: 'wx' });
  }
  return secrets;
}
