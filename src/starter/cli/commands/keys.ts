/**
 * `mpf keys new|list|revoke|rotate`: the gateway's API keys (a keyring of ids, roles and SHA-256
 * digests). `new` prints the key once (or writes it to its own 0600 file) and, given a keyring
 * file, adds its entry; `list`, `revoke` and `rotate` edit the keyring file in place at once
 * (auth/keyring-file.ts), which every running gateway re-reads within a second. The keyring file is
 * `--keyring`, else GATEWAY_API_KEYS_FILE. No command ever prints a key it did not just make.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { type KeyEntry, newKey, ROLES, type Role } from '../../../auth/keyring';
import { addKey, defaultKeyId, readKeyringFile, revokeKey, rotateKey, writeKeyFile } from '../../../auth/keyring-file';
import { fileVariable } from '../../../config/env';
import { printJson, printLines } from '../output';

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

const KEYRING_HELP = 'the keyring file (default GATEWAY_API_KEYS_FILE)';
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
    .command('list')
    .description('the keys of the keyring file: id, role, expiry, label (never a key or its digest)')
    .option('--keyring <file>', KEYRING_HELP)
    .option('--json', 'print JSON')
    .action((opts: { keyring?: string; json?: boolean }) => {
      const entries = readKeyringFile(keyringFile(opts)).map(({ sha256: _digest, ...rest }) => rest);
      if (opts.json) return printJson(entries);
      printLines(entries.length === 0 ? ['no keys'] : entries.map((e) => entryLine(e)));
    });
  keys
    .command('revoke')
    .description('remove a key from the keyring file: every gateway refuses it within a second')
    .argument('<id>', 'the key id (mpf keys list)')
    .option('--keyring <file>', KEYRING_HELP)
    .action((id: string, opts: { keyring?: string }) => {
      const file = keyringFile(opts);
      const gone = revokeKey(file, id);
      printLines([`revoked: ${entryLine(gone)} (removed from ${file})`]);
    });
  keys
    .command('rotate')
    .description('a new key of the same role and label; the old one keeps working for --overlap, then expires')
    .argument('<id>', 'the key id to rotate (mpf keys list)')
    .option('--new-id <id>', "the new key's id (default <role>-<random>)")
    .option('--overlap <duration>', 'how long the old key still works, e.g. 24h, 30m, 0 (default 24h)', parseDuration)
    .option('--keyring <file>', KEYRING_HELP)
    .option('--key-file <file>', KEY_FILE_HELP)
    .action((id: string, opts: { newId?: string; overlap?: number; keyring?: string; keyFile?: string }) => {
      const file = keyringFile(opts);
      const { key, entry, old } = rotateKey(file, id, opts.newId, opts.overlap ?? 24 * 3_600_000);
      printLines([...handOver(key, opts.keyFile), `added: ${entryLine(entry)}`, `old:   ${entryLine(old)}`]);
    });
  return keys;
}
