/**
 * The swap's confirmation window less a safety margin (an assumption: the document is silent),
 * part of the provider contract (ASSUMPTIONS in provider.ts reads it) but zod-free, for the
 * workflow bundle (see notifications.ts).
 */

/** Confirm no later than the window less min(5 s, 10 % of the window). */
export const EXPIRY_SAFETY_MARGIN = { maxMs: 5_000, fraction: 0.1 } as const;

export function expirySafetyMarginMs(windowMs: number): number {
  return Math.min(EXPIRY_SAFETY_MARGIN.maxMs, Math.floor(windowMs * EXPIRY_SAFETY_MARGIN.fraction));
}
