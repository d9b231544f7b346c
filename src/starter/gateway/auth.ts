/**
 * Credentials the gateway checks: the backend's API key (`x-api-key: KEY` or
 * `Authorization: Bearer KEY`) and per-flow bearer tokens, compared by ../../auth/secrets.
 */
import type { FastifyRequest } from 'fastify';
import type { KeyringSource, KeyVerdict } from '../../auth/keyring';
import { bearerToken as bearerOf, secretDigest, secretMatches } from '../../auth/secrets';

/** The token of the request's `Authorization: Bearer <token>`, or undefined when absent or malformed. */
export function bearerToken(req: FastifyRequest): string | undefined {
  return bearerOf(req.headers.authorization);
}

export interface ApiKeyCheck {
  /** 'missing' when no credential was sent, 'wrong' when one was sent and does not match. */
  (req: FastifyRequest): 'ok' | 'missing' | 'wrong';
}

export function apiKeyChecker(apiKey: string): ApiKeyCheck {
  if (typeof apiKey !== 'string' || apiKey.length < 16) {
    throw new Error('gateway: apiKey (GATEWAY_API_KEY) must be at least 16 characters');
  }
  const expected = secretDigest(apiKey);
  return (req) => {
    const header = req.headers['x-api-key'];
    const presented = (Array.isArray(header) ? header[0] : header) ?? bearerToken(req);
    if (presented === undefined || presented === '') return 'missing';
    return secretMatches(presented, expected) ? 'ok' : 'wrong';
  };
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
