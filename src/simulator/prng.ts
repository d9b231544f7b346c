/**
 * Seeded pseudo-random numbers for the simulator: mulberry32, plus independent named streams
 * derived from one seed so that, e.g., the fault decisions do not depend on how many references
 * were generated before them. Not for secrets (auth tokens use node:crypto).
 */

/** FNV-1a 32-bit hash of a string, used to derive stream seeds from labels. */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a tiny, fast, well-distributed 32-bit generator; returns floats in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Prng {
  private readonly next: () => number;

  constructor(seed: number, label = '') {
    this.next = mulberry32((seed ^ hashString(label)) >>> 0);
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next();
  }

  /** An integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** `length` lower-case hex characters. */
  hex(length: number): string {
    let out = '';
    while (out.length < length) out += Math.floor(this.next() * 0x10000).toString(16).padStart(4, '0');
    return out.slice(0, length);
  }
}
