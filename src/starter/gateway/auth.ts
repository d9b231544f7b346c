/**
 * Credentials the gateway checks: the backend's API key (`x-api-key: KEY` or
 * `Authorization: Bearer KEY`) and per-flow bearer tokens. Comparisons are constant-time over
 * SHA-256 digests, so neither the key's length nor its prefix leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** The token of `Authorization: Bearer <token>`, or undefined when absent or malformed. */
export function bearerToken(req: FastifyRequest): string | undefined {
  const m = /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(req.headers.authorization ?? '');
  return m ? m[1] : undefined;
}

export interface ApiKeyCheck {
  /** 'missing' when no credential was sent, 'wrong' when one was sent and does not match. */
  (req: FastifyRequest): 'ok' | 'missing' | 'wrong';
}

export function apiKeyChecker(apiKey: string): ApiKeyCheck {
  if (typeof apiKey !== 'string' || apiKey.length < 16) {
    throw new Error('gateway: apiKey (GATEWAY_API_KEY) must be at least 16 characters');
  }
  const expected = digest(apiKey);
  return (req) => {
    const header = req.headers['x-api-key'];
    const presented = (Array.isArray(header) ? header[0] : header) ?? bearerToken(req);
    if (presented === undefined || presented === '') return 'missing';
    return timingSafeEqual(digest(presented), expected) ? 'ok' : 'wrong';
  };
}
