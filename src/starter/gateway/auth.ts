/**
 * Credentials the gateway checks: the backend's API key (`x-api-key: KEY` or
 * `Authorization: Bearer KEY`) and per-flow bearer tokens, compared by ../../auth/secrets.
 */
import type { FastifyRequest } from 'fastify';
import type { KeyringSource, KeyVerdict } from '../../auth/keyring';
import { bearerToken as bearerOf } from '../../auth/secrets';

/** The token of the request's `Authorization: Bearer <token>`, or undefined when absent or malformed. */
export function bearerToken(req: FastifyRequest): string | undefined {
  return bearerOf(req.headers.authorization);
}

/** The API key a request presents (`x-api-key`, else `Authorization: Bearer`), or undefined. */
export function presentedApiKey(req: FastifyRequest): string | undefined {
  const header = req.headers['x-api-key'];
  const presented = (Array.isArray(header) ? header[0] : header) ?? bearerToken(req);
  return presented === undefined || presented === '' ? undefined : presented;
}

/** Which key of the keyring a request presents: 'missing', or the keyring's verdict. */
export function checkRequestKey(keys: KeyringSource, req: FastifyRequest): KeyVerdict | { kind: 'missing' } {
  const presented = presentedApiKey(req);
  return presented === undefined ? { kind: 'missing' } : keys.current.check(presented);
}
