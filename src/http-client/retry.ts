/**
 * The fetch the gateway client sends through: retries that cannot start a flow twice, a timeout
 * per attempt and a deadline per call.
 *
 *   What is retried   429, 503 and 504 answers; 409 idempotency_key_in_use while the gateway gives
 *                     a Retry-After (the first request with the key still runs); no answer at all
 *                     (connection refused, reset or dropped, an attempt's timeout).
 *   How               up to `maxRetries` times, and never past the call's deadline: after a wait of
 *                     a random 50–100 % of initialDelayMs × 2^n (capped at maxDelayMs), and never
 *                     sooner than the answer's Retry-After (a Retry-After past the deadline ends
 *                     the retries at once).
 *   Why it is safe    every POST carries an Idempotency-Key, generated once per logical call
 *                     (crypto.randomUUID) unless the caller gave one, and the same on each retry:
 *                     the gateway answers a retry with the first request's answer, or runs it again
 *                     only when the first one kept nothing (and then finds the flow the key already
 *                     started). GETs change nothing.
 *
 * A retried answer that stays retryable is returned as the last one (the caller turns it into its
 * typed error); no answer at all ends in MpfConnectionError or MpfTimeoutError. The caller's own
 * AbortSignal is never retried. Each answer's body is read here, inside the attempt, so a connection
 * dropped mid-body is retried too.
 */
import { randomUUID } from 'node:crypto';
import { MpfConnectionError, MpfTimeoutError, retryAfterSecondsOf } from './errors';

export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0: none). */
  maxRetries?: number;
  /** The whole call, retries and waits included, ends within this (default 120 s). */
  deadlineMs?: number;
  /** One attempt's timeout (default 40 s: longer than the gateway's own 30 s wait for a worker). */
  timeoutMs?: number;
  /** The first retry's backoff before jitter (default 500 ms), doubled per retry up to maxDelayMs (default 8 s). */
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Told before each retry (logging, metrics). */
  onRetry?: (info: RetryInfo) => void;
}

/**
 * What `onRetry` is told before each wait: enough to say "answered 503 provider_unavailable (…);
 * waiting 30 s (Retry-After: 30)". No header or body of the request, so nothing secret (the API
 * key, a pin_token) is in it.
 */
export interface RetryInfo {
  method: string;
  url: string;
  /** The attempt that failed, from 1 (the next is retry number `attempt`). */
  attempt: number;
  /** How long the client waits before the next attempt: the jittered backoff, or the Retry-After when longer. */
  delayMs: number;
  /** The status that was retried, or undefined when no answer came. */
  status?: number;
  /** The gateway's error code, or the connection error's code (ECONNRESET, UND_ERR_SOCKET, timeout, …). */
  code?: string;
  /** Why, in words: the gateway's `message`, or what happened to the connection (`no answer within 40000 ms`, …). */
  reason?: string;
  /** The answer's Retry-After in seconds, when it gave one (delayMs is never shorter). */
  retryAfterSeconds?: number;
  idempotencyKey?: string;
}

export const RETRY_DEFAULTS: Required<Omit<RetryOptions, 'onRetry'>> = {
  maxRetries: 3,
  deadlineMs: 120_000,
  timeoutMs: 40_000,
  initialDelayMs: 500,
  maxDelayMs: 8_000,
};

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

/** Statuses retried whatever their body. */
const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 503, 504]);

/** Error codes of a connection that did not answer (Node's and undici's): retried. */
const RETRIED_CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

type Fetch = (input: Request) => Promise<Response>;

/** The error code in a fetch failure (undici puts it on `cause`), if any. */
function connectionCodeOf(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** A fetch failure that is a connection refused, reset or dropped (not a bad URL, a TLS refusal, …). */
function isRetriedConnectionError(err: unknown): boolean {
  const code = connectionCodeOf(err);
  if (code !== undefined) return RETRIED_CONNECTION_CODES.has(code);
  // A body cut off mid-way: undici's "terminated" TypeError.
  return err instanceof TypeError && /terminated|other side closed|socket/i.test(err.message);
}

/** The answer with its body read (so it can be inspected and handed on), or the failure. */
async function bufferedAnswer(res: Response): Promise<Response> {
  const noBody = res.status === 204 || res.status === 205 || res.status === 304;
  const body = noBody ? null : await res.arrayBuffer();
  const headers = new Headers(res.headers);
  headers.delete('content-encoding');
  if (body) headers.set('content-length', String(body.byteLength));
  return new Response(body, { status: res.status, statusText: res.statusText, headers });
}

/** The gateway's error code and message in an answer's body, when it has the error shape. */
async function errorOf(res: Response): Promise<{ code?: string; message?: string }> {
  try {
    const body = (await res.clone().json()) as { error?: unknown; message?: unknown };
    return {
      ...(typeof body?.error === 'string' ? { code: body.error } : {}),
      ...(typeof body?.message === 'string' ? { message: body.message } : {}),
    };
  } catch {
    return {};
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * `fetch` with the retries, Idempotency-Key, timeout and deadline of the module comment. `random`
 * (default Math.random) is the jitter's source.
 */
export function retryingFetch(opts: RetryOptions & { fetch?: Fetch; random?: () => number } = {}): Fetch {
  const o = { ...RETRY_DEFAULTS, ...definedOnly(opts) };
  const random = opts.random ?? Math.random;
  const base: Fetch = opts.fetch ?? ((req) => globalThis.fetch(req));

  return async (request: Request): Promise<Response> => {
    const started = Date.now();
    const deadlineAt = started + o.deadlineMs;
    const headers = new Headers(request.headers);
    if (request.method === 'POST' && !headers.has(IDEMPOTENCY_KEY_HEADER)) headers.set(IDEMPOTENCY_KEY_HEADER, randomUUID());
    const idempotencyKey = headers.get(IDEMPOTENCY_KEY_HEADER) ?? undefined;
    // The body once, sent again on each attempt.
    const body = request.body === null ? undefined : await request.arrayBuffer();
    const callerSignal = request.signal;

    for (let attempt = 1; ; attempt++) {
      const attemptMs = Math.max(1, Math.min(o.timeoutMs, deadlineAt - Date.now()));
      const timeout = AbortSignal.timeout(attemptMs);
      const signal = AbortSignal.any([callerSignal, timeout]);
      let answer: Response | undefined;
      let failure: unknown;
      try {
        const res = await base(new Request(request.url, { method: request.method, headers, body, signal, redirect: request.redirect }));
        answer = await bufferedAnswer(res);
      } catch (err) {
        if (callerSignal.aborted) throw callerSignal.reason ?? err;
        failure = err;
      }

      let code: string | undefined;
      let reason: string | undefined;
      let retryAfter: number | undefined;
      if (answer) {
        const status = answer.status;
        retryAfter = retryAfterSecondsOf(answer.headers.get('retry-after'));
        const said = status >= 400 ? await errorOf(answer) : {};
        ({ code, message: reason } = said);
        const retried = RETRIED_STATUSES.has(status) || (status === 409 && code === 'idempotency_key_in_use' && retryAfter !== undefined);
        if (!retried) return answer;
      } else if (timeout.aborted) {
        code = 'timeout';
        reason = `no answer within ${attemptMs} ms`;
      } else if (isRetriedConnectionError(failure)) {
        code = connectionCodeOf(failure) ?? 'connection_error';
        reason = describe(failure);
      } else {
        throw new MpfConnectionError(`${request.method} ${request.url}: ${describe(failure)}`, { code: 'connection_error', cause: failure, ...(idempotencyKey ? { idempotencyKey } : {}) });
      }

      const backoff = Math.min(o.maxDelayMs, o.initialDelayMs * 2 ** (attempt - 1)) * (0.5 + random() * 0.5);
      const delayMs = Math.round(Math.max(backoff, (retryAfter ?? 0) * 1000));
      // The next attempt must start, and have a moment to answer, before the deadline.
      const outOfTime = Date.now() + delayMs + 50 >= deadlineAt;
      if (attempt > o.maxRetries || outOfTime) {
        if (answer) return answer;
        const why = `${request.method} ${request.url}: ${code === 'timeout' ? `no answer within ${attemptMs} ms` : describe(failure)} (${attempt} attempt${attempt === 1 ? '' : 's'} in ${Date.now() - started} ms)`;
        const init = { code: code === 'timeout' ? 'timeout' : 'connection_error', cause: failure, ...(idempotencyKey ? { idempotencyKey } : {}) };
        throw code === 'timeout' ? new MpfTimeoutError(why, init) : new MpfConnectionError(why, init);
      }
      opts.onRetry?.({
        method: request.method,
        url: request.url,
        attempt,
        delayMs,
        ...(answer ? { status: answer.status } : {}),
        ...(code ? { code } : {}),
        ...(reason ? { reason } : {}),
        ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
        ...(idempotencyKey ? { idempotencyKey } : {}),
      });
      await sleep(delayMs, callerSignal);
    }
  };
}

function describe(err: unknown): string {
  const code = connectionCodeOf(err);
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  const message = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
  return code ? `${message} (${code})` : message;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
