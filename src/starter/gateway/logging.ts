/**
 * The gateway's pino logger options: secrets never reach a log line.
 * - Requests are logged by a custom serializer that keeps method, a sanitised URL and the peer
 *   address only (no headers at all, so no Authorization, x-api-key or cookies).
 * - The URL loses the token segment of /v1/notifications/{kind}/{flow_id}/{token} and of
 *   /codec/web/{token}/…, its query string, and anything that looks like a fragment (`#…`,
 *   `%23…`) a careless client sent; a URL that matched no route keeps only its first segment.
 * - Header paths are redacted as well, in case any code logs a request's headers explicitly.
 * Bodies (PINs) are never logged by fastify; the error handler logs errors without request data.
 */
import type { FastifyRequest } from 'fastify';
import pino from 'pino';

const REDACTED = '[redacted]';

const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'wallet_pin',
  'pin_token',
  '*.wallet_pin',
  '*.pin_token',
];

const NOTIFICATION_PATH = /^(\/v1\/notifications\/[^/?#]*\/[^/?#]*)\/[^?#]*/i;
const CODEC_WEB_PATH = /^(\/codec\/web)\/[^/?#]*/i;

/** A request URL safe to log (see the module comment). */
export function sanitizeUrl(url: string | undefined): string {
  if (!url) return '';
  let out = url;
  const fragment = out.search(/#|%23/i);
  if (fragment >= 0) out = `${out.slice(0, fragment)}#${REDACTED}`;
  const q = out.indexOf('?');
  if (q >= 0) out = `${out.slice(0, q)}?${REDACTED}`;
  out = out.replace(NOTIFICATION_PATH, `$1/${REDACTED}`);
  out = out.replace(CODEC_WEB_PATH, `$1/${REDACTED}`);
  return out;
}

/**
 * What a request's log line says about it. A URL that matched no route (a typo, a probe) may
 * carry anything in its path, so only its first segment is kept.
 */
function serializeRequest(req: FastifyRequest): Record<string, unknown> {
  const routed = typeof req.routeOptions?.url === 'string';
  const url = routed ? sanitizeUrl(req.url) : `${(sanitizeUrl(req.url).match(/^\/[^/?#]*/) ?? [''])[0]}/${REDACTED}`;
  return { method: req.method, url, remoteAddress: req.ip };
}

/**
 * Fastify `logger` option: false stays false; true or an object (pino options, e.g. `{ level,
 * stream }`) gets the redaction and the request serializer added.
 */
export function gatewayLoggerOptions(logger: boolean | object | undefined): false | Record<string, unknown> {
  if (!logger) return false;
  const base = logger === true ? {} : (logger as Record<string, unknown>);
  const serializers = (base.serializers as Record<string, unknown> | undefined) ?? {};
  return {
    level: 'info',
    // One log format across processes: ISO `time`, `service` and `pid` (no hostname), as the worker writes.
    base: { service: 'mpf-gateway', pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...base,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    serializers: { ...serializers, req: serializeRequest },
  };
}
