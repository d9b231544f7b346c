/**
 * Reads the wallet PIN without it ever being a command-line argument: a hidden prompt on a
 * terminal, else the first line of piped stdin (src/auth/secret-input.ts). The PIN is never echoed.
 */
import type { Writable } from 'node:stream';
import { readSecret, SecretInputError, type TtyIn } from '../../auth/secret-input';

export async function readPin(prompt = 'wallet PIN: ', input: TtyIn = process.stdin, output: Writable = process.stderr): Promise<string> {
  const pin = await readSecret(prompt, input, output);
  if (pin.trim() === '') throw new SecretInputError('no PIN given (type it at the prompt, or pipe it on stdin)');
  return pin;
}
