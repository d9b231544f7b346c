/**
 * How one provider exchange becomes either parsed data or a ProviderError. Pure functions: the
 * transport (client.ts) hands over what happened on the wire, this module decides what it means.
 *
 * The rule that matters for money: a POST that may have reached the provider and got no usable
 * answer is AMBIGUOUS (never retried blindly); the same failure on a GET is TRANSIENT.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { z } from 'zod';
import { ASSUMPTIONS, Envelope, isSuccessStatus, type ProviderEndpoint } from '../contract/provider';
import {
  ProviderAmbiguousError,
  ProviderAuthError,
  type ProviderError,
  ProviderRateLimitedError,
  ProviderRejectedError,
  ProviderTransientError,
} from './errors';
import { sanitizeExcerpt } from './sanitize';
import { networkCodeOf, NOTHING_SENT_CODES } from '../contract/network-codes';

export { networkCodeOf, NOTHING_SENT_CODES };

export type HttpMethod = 'GET' | 'POST';

export interface ExchangeContext {
  endpoint: ProviderEndpoint;
  method: HttpMethod;
  /** Strings that must never appear in an error: credentials, the request's auth_token and PIN. */
  secrets: readonly (string | undefined)[];
}

/** What came back on the wire. `text` is undefined when the body could not be read in full. */
export interface WireResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text?: string;
  bodyError?: unknown;
}


/** Retry-After as milliseconds: delay-seconds or an HTTP-date, capped by ASSUMPTIONS.retryAfterCapMs. */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  let ms: number;
  if (/^\d+$/.test(raw)) ms = Number(raw) * 1000;
  else {
    const at = Date.parse(raw);
    if (Number.isNaN(at)) return undefined;
    ms = Math.max(0, at - nowMs);
  }
  return Math.min(ms, ASSUMPTIONS.retryAfterCapMs);
}

export function requestIdOf(headers: IncomingHttpHeaders): string | undefined {
  const v = headers['x-request-id'] ?? headers['request-id'];
  const s = Array.isArray(v) ? v[0] : v;
  if (!s) return undefined;
  const clean = sanitizeExcerpt(s);
  return clean ? clean.slice(0, 100) : undefined;
}


/** A request that failed without an HTTP response. */
export function classifyNetworkError(ctx: ExchangeContext, err: unknown): ProviderError {
  const code = networkCodeOf(err) ?? 'UNKNOWN';
  const init = { endpoint: ctx.endpoint, networkCode: code, cause: err };
  if (NOTHING_SENT_CODES.has(code)) {
    return new ProviderTransientError(`provider ${ctx.endpoint}: could not connect (${code}); nothing was sent`, init);
  }
  if (ctx.method === 'GET') {
    return new ProviderTransientError(`provider ${ctx.endpoint}: request failed (${code}); safe to retry a read`, init);
  }
  return new ProviderAmbiguousError(
    `provider ${ctx.endpoint}: no answer after the request may have reached the provider (${code}); outcome unknown, reconcile before retrying`,
    init,
  );
}

const contentTypeOf = (headers: IncomingHttpHeaders): string =>
  String(headers['content-type'] ?? '').split(';')[0].trim().toLowerCase() || 'no content-type';

function parseJsonBody(res: WireResponse): { ok: true; value: unknown } | { ok: false; why: string } {
  if (res.text === undefined) return { ok: false, why: 'body could not be read' };
  const ct = contentTypeOf(res.headers);
  const trimmed = res.text.trim();
  if (trimmed === '') return { ok: false, why: 'empty body' };
  if (ct.includes('html') || trimmed.startsWith('<')) return { ok: false, why: `${ct}, not JSON` };
  try {
    return { ok: true, value: JSON.parse(trimmed) };
  } catch {
    return { ok: false, why: `${ct}, not valid JSON` };
  }
}

/** The provider's own explanation in an error body, masked; tolerant of common shapes. */
function providerMessageOf(json: unknown, secrets: ExchangeContext['secrets']): string | undefined {
  if (json === null || typeof json !== 'object') return undefined;
  const o = json as Record<string, unknown>;
  const err = o.error && typeof o.error === 'object' ? (o.error as Record<string, unknown>) : undefined;
  const firstOfErrors =
    Array.isArray(o.errors) && o.errors[0] && typeof o.errors[0] === 'object'
      ? (o.errors[0] as Record<string, unknown>).message
      : undefined;
  for (const c of [o.message, o.error, err?.message, o.detail, firstOfErrors]) {
    if (typeof c === 'string' && c.trim()) return sanitizeExcerpt(c, secrets) || undefined;
  }
  return undefined;
}

const withMessage = (head: string, msg: string | undefined): string => (msg ? `${head}: ${msg}` : head);

/** A 2xx we cannot use: on a POST the provider may have acted (ambiguous); on a GET just read again. */
function unusableSuccess(ctx: ExchangeContext, res: WireResponse, why: string): ProviderError {
  const init = { endpoint: ctx.endpoint, httpStatus: res.status, requestId: requestIdOf(res.headers) };
  const head = `provider ${ctx.endpoint}: unusable answer (HTTP ${res.status}, ${why})`;
  return ctx.method === 'POST'
    ? new ProviderAmbiguousError(`${head}; the request may have been applied, reconcile before retrying`, init)
    : new ProviderTransientError(head, init);
}

/** Field paths of schema issues, never the offending values. */
const issuePaths = (err: z.ZodError, prefix: string): string =>
  [...new Set(err.issues.map((i) => [prefix, ...i.path.map(String)].join('.')))].join(', ');

/**
 * Classifies an HTTP response. Returns the success envelope and its data parsed by `dataSchema`
 * (when given), or throws the ProviderError that describes what happened.
 */
export function interpretResponse<T>(
  ctx: ExchangeContext,
  res: WireResponse,
  dataSchema?: z.ZodType<T>,
): { envelope: Envelope; data: T | undefined } {
  const requestId = requestIdOf(res.headers);
  const base = { endpoint: ctx.endpoint, httpStatus: res.status, requestId };
  const { status } = res;

  if (status >= 200 && status < 300) {
    const body = parseJsonBody(res);
    if (!body.ok) throw unusableSuccess(ctx, res, body.why);
    const env = Envelope.safeParse(body.value);
    if (!env.success) throw unusableSuccess(ctx, res, 'JSON without the status/message envelope');
    if (!isSuccessStatus(env.data.status)) {
      const providerMessage = sanitizeExcerpt(env.data.message, ctx.secrets) || undefined;
      const statusWord = sanitizeExcerpt(env.data.status, ctx.secrets).slice(0, 40);
      throw new ProviderRejectedError(
        withMessage(`provider ${ctx.endpoint}: answered HTTP ${status} with status "${statusWord}"`, providerMessage),
        { ...base, providerMessage },
      );
    }
    if (!dataSchema) return { envelope: env.data, data: undefined };
    const data = dataSchema.safeParse(env.data.data);
    if (!data.success) {
      throw unusableSuccess(ctx, res, `data does not match the contract at ${issuePaths(data.error, 'data')}`);
    }
    return { envelope: env.data, data: data.data };
  }

  const body = parseJsonBody(res);
  const providerMessage = body.ok ? providerMessageOf(body.value, ctx.secrets) : undefined;
  const init = { ...base, providerMessage };

  if (status === 401 || status === 403) {
    throw new ProviderAuthError(withMessage(`provider ${ctx.endpoint}: credentials refused (HTTP ${status})`, providerMessage), init);
  }
  if (status === 429) {
    const retryAfterMs = parseRetryAfterMs(res.headers['retry-after']);
    const after = retryAfterMs === undefined ? '' : `, retry after ${retryAfterMs} ms`;
    throw new ProviderRateLimitedError(
      withMessage(`provider ${ctx.endpoint}: rate limited (HTTP 429${after})`, providerMessage),
      { ...init, retryAfterMs },
    );
  }
  if (status === 408) {
    // RFC 9110: the server did not receive a complete request, so it cannot have acted on it.
    throw new ProviderTransientError(withMessage(`provider ${ctx.endpoint}: request timed out at the provider (HTTP 408)`, providerMessage), init);
  }
  if (status >= 500) {
    const head = `provider ${ctx.endpoint}: server error (HTTP ${status})`;
    if (ctx.method === 'GET') throw new ProviderTransientError(withMessage(head, providerMessage), init);
    throw new ProviderAmbiguousError(
      withMessage(`${head} after the request was sent; outcome unknown, reconcile before retrying`, providerMessage),
      init,
    );
  }
  if (status >= 400) {
    throw new ProviderRejectedError(withMessage(`provider ${ctx.endpoint}: rejected (HTTP ${status})`, providerMessage), init);
  }
  // 1xx/3xx: redirects are not followed; a redirecting base URL is a configuration error.
  throw new ProviderRejectedError(
    `provider ${ctx.endpoint}: unexpected HTTP ${status} (redirects are not followed; check the provider base URL)`,
    init,
  );
}
