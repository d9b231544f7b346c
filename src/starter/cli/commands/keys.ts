/**
 * `mpf keys new|create|list|revoke|rotate`: the gateway's API keys, of two kinds.
 *
 *  - The keyring file (ids, roles and SHA-256 digests): `new` prints the key once (or writes it to
 *    its own 0600 file) and, given a keyring file, adds its entry; `list`, `revoke` and `rotate`
 *    edit the file in place at once (auth/keyring-file.ts), which every running gateway re-reads
 *    within a second. The file is `--keyring`, else GATEWAY_API_KEYS_FILE.
 *  - The keys made through the API (`/v1/api_keys`, kept in Temporal: client/api-keys.ts):
 *    `create`; `revoke` and `rotate` of an `ak_…` id; `list` when MPF_GATEWAY_URL is set or
 *    GATEWAY_API_KEYS_FILE is not (never with `--keyring`). Through the gateway (MPF_GATEWAY_URL
 *    with an operator's MPF_API_KEY or MPF_ACCESS_TOKEN), else Temporal directly.
 *
 * No command ever prints a key it did not just make.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { type KeyEntry, newKey, ROLES, type Role } from '../../../auth/keyring';
import { addKey, defaultKeyId, readKeyringFile, revokeKey, rotateKey, writeKeyFile } from '../../../auth/keyring-file';
import { fileVariable } from '../../../config/env';
import { API_KEY_ID } from '../../../contract/api-keys';
import { cliSetting } from '../../../config/cli-env';
import { printJson, printLines } from '../output';
import { runApiKeys } from './keys-api';

function parseExpiry(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError('must be an ISO 8601 time, e.g. 2027-01-31T00:00:00Z');
  if (ms <= Date.now()) throw new InvalidArgumentError('must be in the future');
  return new Date(ms).toISOString();
}

/** `24h`, `30m`, `90s`, `0`: how long the old key of a rotation keeps working. */
function parseDuration(value: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('must be a duration such as 24h, 30m, 90s or 0');
  return Number(m[1]) * { '': 1000, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as '' | 's' | 'm' | 'h' | 'd'];
}

/** A whole number of seconds, 0 or more. */
function parseSeconds(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError('must be a whole number of seconds, e.g. 3600 or 0');
  return Number(value);
}

const KEYRING_HELP = 'the keyring file (default GATEWAY_API_KEYS_FILE; without either, the keys made through the API)';

/**
 * Whether list, revoke and rotate act on the keys made through the API: not when --keyring names a
 * file; for revoke and rotate, when the id is one of theirs (ak_…); for list, when MPF_GATEWAY_URL
 * is set or GATEWAY_API_KEYS_FILE is not.
 */
function onApi(opts: { keyring?: string }, id?: string): boolean {
  if (opts.keyring) return false;
  if (id !== undefined) return API_KEY_ID.test(id);
  return Boolean(cliSetting('MPF_GATEWAY_URL')) || !fileVariable('GATEWAY_API_KEYS');
}
const KEY_FILE_HELP = 'write the new key to this file (mode 0600, never overwritten) instead of printing it';

function keyringFile(opts: { keyring?: string }): string {
  const file = opts.keyring ?? fileVariable('GATEWAY_API_KEYS');
  if (!file) throw new Error('--keyring: is required (or set GATEWAY_API_KEYS_FILE): the keyring file the gateways read');
  return file;
}


/** The new key: printed once, or written to --key-file. */
function handOver(key: string, keyFile: string | undefined): string[] {
  if (keyFile) {
    writeKeyFile(keyFile, key);
    return [`key:   written to ${keyFile} (mode 0600; give it to its caller, then delete it there)`];
  }
  return [`key:   ${key}`, '       (shown once: give it to its caller now; only its SHA-256 is kept)'];
}

const entryLine = (e: Omit<KeyEntry, 'sha256'>, now = Date.now()): string =>
  [e.id.padEnd(24), e.role.padEnd(9), e.expires_at ? `${Date.parse(e.expires_at) <= now ? 'expired' : 'expires'} ${e.expires_at}` : 'no expiry', e.label ? ` ${e.label}` : ''].join(' ').trimEnd();

export function keysCommand(): Command {
  const keys = new Command('keys').description("the gateway's API keys (a keyring of ids, roles and SHA-256 digests)");
  keys
    .command('new')
    .description('make a new API key: prints the key once; adds its entry to the keyring file with --keyring (or GATEWAY_API_KEYS_FILE), else prints the entry')
    .addOption(new Option('--role <role>', 'what the key may do: read_only (GETs and lists), backend (+ start and cancel flows), operator (+ /v1/admin/*)').choices([...ROLES]).makeOptionMandatory())
    .option('--id <id>', 'its public id, shown in logs, metrics and audit records (default <role>-<random>)')
    .option('--label <text>', 'who or what holds it, e.g. "checkout service" or "Ada (operator)"')
    .option('--expires <time>', 'refused after this ISO 8601 time (401 key_expired); for rolling a key', parseExpiry)
    .option('--keyring <file>', KEYRING_HELP)
    .option('--key-file <file>', KEY_FILE_HELP)
    .action((opts: { role: Role; id?: string; label?: string; expires?: string; keyring?: string; keyFile?: string }) => {
      const spec = { id: opts.id ?? defaultKeyId(opts.role), role: opts.role, label: opts.label, expires_at: opts.expires };
      const file = opts.keyring ?? fileVariable('GATEWAY_API_KEYS');
      if (file) {
        const { key, entry } = addKey(file, spec);
        return printLines([...handOver(key, opts.keyFile), `added: ${entryLine(entry)} to ${file} (every gateway picks it up within a second)`]);
      }
      const { key, entry } = newKey(spec);
      printLines([
        ...handOver(key, opts.keyFile),
        `entry: ${JSON.stringify(entry)}`,
        '       (add it to the JSON array in GATEWAY_API_KEYS_FILE, or run with --keyring; every gateway picks it up within a second)',
      ]);
    });
  keys
    .command('create')
    .description('make a key through the API (kept in Temporal, every gateway takes it within seconds): prints the key once')
    .addOption(new Option('--role <role>', 'what the key may do: read_only (GETs and lists), backend (+ start and cancel flows), operator (+ the operator routes)').choices([...ROLES]).makeOptionMandatory())
    .option('--label <text>', 'who or what holds it, e.g. "checkout service"')
    .option('--expires-at <time>', 'refused after this ISO 8601 time (401 key_expired)', parseExpiry)
    .option('--json', 'print JSON')
    .action((opts: { role: Role; label?: string; expiresAt?: string; json?: boolean }) =>
      runApiKeys('create', (k) => k.create({ role: opts.role, ...(opts.label !== undefined ? { label: opts.label } : {}), ...(opts.expiresAt ? { expires_at: opts.expiresAt } : {}) }), opts.json),
    );
  keys
    .command('list')
    .description('the keys made through the API, or with --keyring (or GATEWAY_API_KEYS_FILE) those of the keyring file: id, role, expiry, label (never a key or its digest)')
    .option('--keyring <file>', KEYRING_HELP)
    .option('--json', 'print JSON')
    .action((opts: { keyring?: string; json?: boolean }) => {
      if (onApi(opts)) return runApiKeys('list', (k) => k.list(), opts.json);
      const entries = readKeyringFile(keyringFile(opts)).map(({ sha256: _digest, ...rest }) => rest);
      if (opts.json) return printJson(entries);
      printLines(entries.length === 0 ? ['no keys'] : entries.map((e) => entryLine(e)));
    });
  keys
    .command('revoke')
    .description('refuse a key from now on: one made through the API (every gateway within seconds), or with --keyring one removed from the keyring file (within a second)')
    .argument('<id>', 'the key id (mpf keys list)')
    .option('--keyring <file>', KEYRING_HELP)
    .option('--json', 'print JSON (a key made through the API)')
    .action((id: string, opts: { keyring?: string; json?: boolean }) => {
      if (onApi(opts, id)) return runApiKeys('revoke', (k) => k.revoke(id), opts.json);
      const file = keyringFile(opts);
      const gone = revokeKey(file, id);
      printLines([`revoked: ${entryLine(gone)} (removed from ${file})`]);
    });
  keys
    .command('rotate')
    .description('a new key of the same role and label (printed once); the old one keeps working for the overlap, then expires')
    .argument('<id>', 'the key id to rotate (mpf keys list)')
    .option('--overlap-seconds <n>', 'a key made through the API: how long the old key still works, in seconds (default 86400, at most 604800; 0: it stops at once)', parseSeconds)
    .option('--new-id <id>', "the keyring file: the new key's id (default <role>-<random>)")
    .option('--overlap <duration>', 'the keyring file: how long the old key still works, e.g. 24h, 30m, 0 (default 24h)', parseDuration)
    .option('--keyring <file>', KEYRING_HELP)
    .option('--key-file <file>', KEY_FILE_HELP)
    .option('--json', 'print JSON (a key made through the API)')
    .action((id: string, opts: { overlapSeconds?: number; newId?: string; overlap?: number; keyring?: string; keyFile?: string; json?: boolean }) => {
      if (onApi(opts, id)) return runApiKeys('rotate', (k) => k.rotate(id, opts.overlapSeconds), opts.json);
      const file = keyringFile(opts);
      const { key, entry, old } = rotateKey(file, id, opts.newId, opts.overlap ?? 24 * 3_600_000);
      printLines([...handOver(key, opts.keyFile), `added: ${entryLine(entry)}`, `old:   ${entryLine(old)}`]);
    });
  return keys;
}
