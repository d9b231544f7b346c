/** The provider client and its error taxonomy (the only code that talks HTTP to the provider). */
export * from './errors';
export { ProviderClient, providerClientFromEnv, DEFAULT_TIMEOUTS, MAX_RESPONSE_BYTES } from './client';
export type { ProviderClientConfig } from './client';
export { parseRetryAfterMs, NOTHING_SENT_CODES } from './classify';
export { sanitizeExcerpt } from './sanitize';
