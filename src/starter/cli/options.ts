/** Option parsers and help texts the commands share (commander calls a parser with the raw text). */
import fs from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { ConfigError } from '../../config/env';

export const JSON_HELP = 'print machine-readable JSON instead of text';
export const WAIT_HELP = 'seconds to wait for the worker before giving up (default 60)';
/** How long a command waits for the worker by default (`--wait` changes it). */
export const DEFAULT_WAIT_SECONDS = 60;

export function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
}

/**
 * The secret in the file an option names (`--api-key-file`, `--pin-token-file`, `--secret-file`),
 * trimmed; a ConfigError naming the option and the file (never its content) when it cannot be read.
 */
export function readOptionFile(option: string, file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new ConfigError(`${option}: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, { cause: e });
  }
}

/** A non-negative integer (seconds, seeds). */
export function parseCount(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be a whole number such as 30');
  return n;
}

/** A positive whole number (seconds to wait). */
export function parsePositive(value: string): number {
  const n = parseCount(value);
  if (n < 1) throw new InvalidArgumentError('must be at least 1');
  return n;
}

/** A positive decimal amount as typed ("100", "12.50"); the contract checks bounds and decimals. */
export function parseAmount(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value.trim())) throw new InvalidArgumentError('must be a positive number such as 100 or 12.50');
  return Number(value.trim());
}

export function parseHttpUrl(value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be an absolute http(s) URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InvalidArgumentError('must be an absolute http(s) URL');
  return value;
}

export function parseHostList(value: string): string[] {
  return value.split(',').map((h) => h.trim()).filter(Boolean);
}
