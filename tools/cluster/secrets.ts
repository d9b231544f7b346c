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
import { API_KEYS, KEYRING_FILE, SECRET_FILES, SECRET_RECIPES, type SecretName } from './topology';

export type Secrets = Record<SecretName, string>;

/** One secret, made as SECRET_RECIPES says (compose's `secrets` job makes the same with `openssl rand`). */
export function generateSecret(name: SecretName): string {
  const r = SECRET_RECIPES[name];
  return `${r.prefix ?? ''}${randomBytes(r.bytes).toString(r.encoding)}`;
}

export function secretsDir(stateDir: string): string {
  return path.join(stateDir, 'secrets');
}

/** The secret in `dir`, when its file is there and not empty. */
function readSecret(dir: string, name: SecretName): string | undefined {
  try {
    return fs.readFileSync(path.join(dir, SECRET_FILES[name]), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
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

/**
 * Writes the secret files; returns the secrets. With `reuse` each existing secret is kept and only
 * a missing one is made (as compose's `secrets` job does): a state dir kept from a release with
 * fewer secrets keeps its database password and the payload key its flows are encrypted with.
 */
export function prepareSecrets(stateDir: string, reuse: boolean): Secrets {
  const dir = secretsDir(stateDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  prepareApiKeys(dir, reuse);
  const secrets = {} as Secrets;
  for (const name of Object.keys(SECRET_FILES) as SecretName[]) {
    const kept = reuse ? readSecret(dir, name) : undefined;
    secrets[name] = kept ?? generateSecret(name);
    if (kept) continue;
    const p = path.join(dir, SECRET_FILES[name]);
    fs.rmSync(p, { force: true });
    fs.writeFileSync(p, `${secrets[name]}\n`, { mode: 0o600, flag: 'wx' });
  }
  return secrets;
}
