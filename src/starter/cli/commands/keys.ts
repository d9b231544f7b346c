/**
 * `mpf keys new --role backend [--id …] [--label …] [--expires …]`: makes an API key for the
 * gateway's keyring. Prints the key once (give it to its caller; it is not kept anywhere) and the
 * keyring entry to add to GATEWAY_API_KEYS_FILE (its SHA-256 only, never the key).
 */
import { randomBytes } from 'node:crypto';
import { Command, InvalidArgumentError, Option } from 'commander';
import { newKey, ROLES, type Role } from '../../../auth/keyring';

function parseExpiry(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new InvalidArgumentError('must be an ISO 8601 time, e.g. 2027-01-31T00:00:00Z');
  if (ms <= Date.now()) throw new InvalidArgumentError('must be in the future');
  return new Date(ms).toISOString();
}

export function keysCommand(): Command {
  const keys = new Command('keys').description("the gateway's API keys (a keyring of ids, roles and SHA-256 digests)");
  keys
    .command('new')
    .description('make a new API key: prints the key once and the entry to add to GATEWAY_API_KEYS_FILE')
    .addOption(new Option('--role <role>', 'what the key may do: read_only (GETs and lists), backend (+ start and cancel flows), operator (+ /v1/admin/*)').choices([...ROLES]).makeOptionMandatory())
    .option('--id <id>', 'its public id, shown in logs, metrics and audit records (default <role>-<random>)')
    .option('--label <text>', 'who or what holds it, e.g. "checkout service" or "Ada (operator)"')
    .option('--expires <time>', 'refused after this ISO 8601 time (401 key_expired); for rolling a key', parseExpiry)
    .action((opts: { role: Role; id?: string; label?: string; expires?: string }) => {
      const id = opts.id ?? `${opts.role.replace('_', '-')}-${randomBytes(3).toString('hex')}`;
      const { key, entry } = newKey({ id, role: opts.role, label: opts.label, expires_at: opts.expires });
      process.stdout.write(
        [
          `key:   ${key}`,
          '       (shown once: give it to its caller now; only its SHA-256 is kept)',
          `entry: ${JSON.stringify(entry)}`,
          '       (add it to the JSON array in GATEWAY_API_KEYS_FILE; every gateway picks it up within a second)',
          '',
        ].join('\n'),
      );
    });
  return keys;
}
