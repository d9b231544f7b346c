/** How the client commands print: JSON, lines, padded rows, amounts and expiry times. */

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLines(lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** "  label     value" rows with the labels padded to one width. */
export function rows(pairs: Array<[string, string | number | undefined]>, indent = '  '): string[] {
  const shown = pairs.filter(([, v]) => v !== undefined && v !== '');
  const width = Math.max(0, ...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${indent}${k.padEnd(width)}  ${String(v)}`);
}

export function formatAmount(n: number | undefined, currency: string): string | undefined {
  if (n === undefined) return undefined;
  const decimals = Number.isInteger(n) ? 0 : 2;
  return `${n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: 8 })} ${currency}`;
}

/** "2025-01-01T10:00:00.000Z (in 4 min 55 s)". */
export function withTimeLeft(iso: string | undefined, now = Date.now()): string | undefined {
  if (!iso) return undefined;
  const ms = Date.parse(iso) - now;
  if (!Number.isFinite(ms)) return iso;
  if (ms <= 0) return `${iso} (passed)`;
  const s = Math.round(ms / 1000);
  const left = s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
  return `${iso} (in ${left})`;
}
