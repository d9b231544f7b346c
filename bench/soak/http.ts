/**
 * Small helpers of the soak: raw HTTP for what is not a gateway call (the simulator's checkout and
 * control API; loopback only, bounded by a timeout), sleeping, and its seeded PRNG. Gateway calls
 * go through the typed client (flows.ts).
 */
import { type CallOptions, http, type HttpAnswer } from '../../test/helpers/http';

export type Answer = HttpAnswer;

/** A raw request, answered within `timeoutMs` (default 60 s). */
export const call = (method: 'GET' | 'POST', url: string, opts: CallOptions = {}): Promise<Answer> => http(method, url, { timeoutMs: 60_000, ...opts });

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
