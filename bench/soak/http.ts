/** Small HTTP helpers of the soak (undici, loopback only, bounded by timeouts). */
import { request } from 'undici';

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export async function call(
  method: 'GET' | 'POST',
  url: string,
  opts: { body?: unknown; form?: Record<string, string>; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = 'application/json';
  } else if (opts.form) {
    body = new URLSearchParams(opts.form).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  const timeout = opts.timeoutMs ?? 60_000;
  const res = await request(url, { method, headers, body, headersTimeout: timeout, bodyTimeout: timeout });
  const text = await res.body.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** Seeded PRNG (mulberry32): the soak's scripts, delays and chaos choices. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  float(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.float() * xs.length)] as T;
  }
  shuffle<T>(xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(this.float() * (i + 1));
      [xs[i], xs[j]] = [xs[j] as T, xs[i] as T];
    }
    return xs;
  }
}
