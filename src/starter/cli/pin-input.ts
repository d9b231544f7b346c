/**
 * Reads the wallet PIN without it ever being a command-line argument (argv is visible to every
 * user of the machine through ps and lands in shell history): from a hidden prompt when stdin is
 * a terminal, else the first line of piped stdin. The PIN is never echoed.
 */
import type { Readable, Writable } from 'node:stream';

/** Longest piped input we read; a PIN is short (the contract bounds it far below this). */
const MAX_PIPED_BYTES = 4096;

class PinInputError extends Error {
  override name = 'PinInputError';
}

interface TtyIn extends Readable {
  isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

export async function readPin(
  prompt = 'wallet PIN: ',
  input: TtyIn = process.stdin,
  output: Writable = process.stderr,
): Promise<string> {
  const pin = input.isTTY && input.setRawMode ? await readHidden(prompt, input, output) : await readPiped(input);
  if (pin.trim() === '') throw new PinInputError('no PIN given (type it at the prompt, or pipe it on stdin)');
  return pin;
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
        if (ch === '\u0003') return finish(new PinInputError('cancelled'));
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
