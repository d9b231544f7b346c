/**
 * Exchange rates of the simulated swap: a fixed table for the common pairs, the reverse pair as
 * 1/rate rounded to 8 decimals, and a seeded (stable per pair) rate for anything else.
 */
import { hashString, mulberry32 } from './prng';

const TABLE: Record<string, number> = {
  'USD->NGN': 1500.25,
  'EUR->NGN': 1625.5,
  'GBP->NGN': 1890.75,
  'USDT->NGN': 1498.1,
  'USDC->NGN': 1499.3,
  'USD->EUR': 0.92,
  'USD->GBP': 0.79,
  'USDT->USD': 1,
  'USDC->USD': 1,
};

export const round = (n: number, dp: number): number => {
  const f = 10 ** dp;
  return Math.round((n + Number.EPSILON) * f) / f;
};

/** The rate used to convert one unit of `from` into `to`. */
export function rateFor(from: string, to: string, seed: number): number {
  if (from === to) return 1;
  const direct = TABLE[`${from}->${to}`];
  if (direct !== undefined) return direct;
  const reverse = TABLE[`${to}->${from}`];
  if (reverse !== undefined) return round(1 / reverse, 8);
  // Unknown pair: a seeded rate for the lexicographically first direction, its inverse otherwise.
  const [a, b] = from < to ? [from, to] : [to, from];
  const r = round(0.5 + mulberry32((seed ^ hashString(`${a}->${b}`)) >>> 0)() * 2000, 4);
  return from === a ? r : round(1 / r, 8);
}

export function convert(amount: number, rate: number): number {
  return round(amount * rate, 2);
}
