/**
 * What a failed exchange's network error code says about a request (pure): whether it can have
 * reached the other side. Used by the provider client (classify.ts) and by the simulator's
 * forwarder, which must never answer for a request the simulator may have acted on.
 */

/**
 * Network error codes that prove nothing reached the provider (connection never established,
 * name not resolved, TLS handshake refused). Anything else after dispatch may have been sent.
 */
export const NOTHING_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The first `code` found on an error, its cause chain or an AggregateError's members. */
export function networkCodeOf(err: unknown): string | undefined {
  const queue: unknown[] = [err];
  const seen = new Set<unknown>();
  while (queue.length > 0) {
    const e = queue.shift();
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const rec = e as { code?: unknown; cause?: unknown; errors?: unknown };
    if (typeof rec.code === 'string' && rec.code) return rec.code;
    queue.push(rec.cause);
    if (Array.isArray(rec.errors)) queue.push(...rec.errors);
  }
  return undefined;
}
