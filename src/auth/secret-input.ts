/**
 * Reads a secret (a wallet PIN, a person's password) without it ever being a command-line argument
 * (argv is visible to every user of the machine through ps and lands in shell history): from a
 * hidden prompt when stdin is a terminal, else the first line of piped stdin. Never echoed.
 */
import type { Readable, Writable } from 'node:stream';

/** Longest piped input we read; a PIN or a password is far shorter. */
const MAX_PIPED_BYTES = 4096;

export class SecretInputError extends Error {
  override name = 'SecretInputError';
}

export interface TtyIn extends Readable {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

/** The secret as typed (hidden) or piped (its first line, trimmed); '' when nothing was given. Ctrl-C at the prompt: SecretInputError('cancelled'). */
export async function readSecret(prompt: string, input: TtyIn = process.stdin, output: Writable = process.stderr): Promise<string> {
  return input.isTTY && input.setRawMode ? readHidden(prompt, input, output) : readPiped(input);
}

function readHidden(prompt: string, input: TtyIn, output: Writable): Promise<string> {
  output.write(prompt);
  input.setRawMode?.(true);
  input.setEncoding('utf8');
  input.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (err?: Error): void => {
      input.off('data', onData);
      input.setRawMode?.(false);
      input.pause();
      output.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string): void => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish();
        if (ch === '\u0003') return finish(new SecretInputError('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    input.on('data', onData);
  });
}

async function readPiped(input: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buf.length;
    chunks.push(buf);
    if (buf.includes(0x0a) || size >= MAX_PIPED_BYTES) break;
  }
  const text = Buffer.concat(chunks).toString('utf8').slice(0, MAX_PIPED_BYTES);
  return (text.split(/\r?\n/)[0] ?? '').trim();
}
