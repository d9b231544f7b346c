/**
 * The typed HTTP client of the provider's four endpoints (undici). Every response is parsed with
 * the contract (envelope, then the data schema) and every failure becomes a ProviderError.
 *
 * Concurrency: the client owns one undici Pool for the provider's origin, keep-alive, no
 * pipelining. Its gate (connection-gate.ts) is our client-side rate bound: at most
 * `maxConnections` requests are in flight per client (the Pool has one spare socket beyond that,
 * used only while a failed connection closes). Further calls wait at the gate, in arrival order,
 * not inside the Pool: a call passes the gate when a connection is free, is then asked its
 * caller's `admit` (the provider guard's admission), and is sent at once. So the guard decides at
 * the moment a call goes out, not before it queued behind slow calls (an open breaker would
 * otherwise still let out every call queued before it opened), and a call's latency, its slow
 * notice and its outcome count from that moment. A gate in front of the Pool rather than a check
 * inside undici's dispatch (an interceptor), because that check would have to answer synchronously
 * while the guard's admission may take a round trip (a half-open breaker's trial claim).
 */
import { Pool, type Dispatcher } from 'undici';
import type { z } from 'zod';
import { ConfigError, isLoopbackUrl, type AppEnv } from '../config/env';
import {
  ASSUMPTIONS,
  CategoriesData,
  type Category,
  describeZodError,
  HostedLinkData,
  HostedLinkRequest,
  PROVIDER_PATHS,
  type ProviderEndpoint,
  SwapConfirmRequest,
  type SwapConfirmResult,
  SwapInitData,
  SwapInitRequest,
  toProviderSwapInitBody,
} from '../contract/provider';
import { classifyNetworkError, type ExchangeContext, type HttpMethod, interpretResponse, requestIdOf, type WireResponse } from './classify';
import { ProviderRequestInvalidError } from './errors';
import { ConnectionGate } from './connection-gate';

export interface ProviderClientConfig {
  baseUrl: string;
  secretKey: string;
  accessToken: string;
  merchantRef: string;
  /** Must be true for a non-loopback baseUrl (the provider has only a live environment). */
  live?: boolean;
  /** Send `Authorization: Bearer <accessToken>` on the category listing too (undocumented). */
  categoriesBearer?: boolean;
  /** Injected by tests; default: one undici Pool for the baseUrl's origin, closed by close(). */
  dispatcher?: Dispatcher;
  /** Calls in flight at once (the Pool's connections and the gate's permits); default ASSUMPTIONS.maxConnectionsPerOrigin. */
  maxConnections?: number;
  timeouts?: { connectMs?: number; headersMs?: number; bodyMs?: number };
}

export const DEFAULT_TIMEOUTS = { connectMs: 5_000, headersMs: 10_000, bodyMs: 10_000 } as const;
/** Longest response body we read; a larger one is treated as an unusable answer. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
const USER_AGENT = 'merchant-payment-flows/0.1';

/** One provider call as observers see it: never a body, a header or a token. */
export interface ProviderCall {
  endpoint: ProviderEndpoint;
  method: HttpMethod;
  /** The HTTP status, when an answer arrived. */
  status?: number;
  latencyMs: number;
  /** The ProviderError kind when the call failed (rejected, auth, rate_limited, transient, ambiguous). */
  errorKind?: string;
  /** The provider's request id header, when it sent one. */
  providerRequestId?: string;
  /**
   * 'slow': an early notice, to observers that asked for one (observe's slowMs), that the call is
   * still unanswered after slowMs (no status, no errorKind); its final notice follows as usual.
   */
  phase?: 'slow';
  /** On the final notice of a call that had its slow notice. */
  slow?: boolean;
  /** How long the call waited for a connection before it was sent (ms; absent when it did not wait). */
  queuedMs?: number;
}
export type ProviderCallObserver = (call: ProviderCall) => void;

/** How one call is let out (every method takes it; none of it is sent). */
export interface SendOptions {
  /**
   * Asked once the call has its connection, right before it is sent: a throw refuses the call
   * (nothing is sent, no observer is told, the error is the call's). The provider guard's
   * admission (activities/guard.ts). The connection stays the call's while it is asked.
   */
  admit?: () => Promise<void> | void;
  /** Ends the wait for a connection (the call's activity cancelled or timed out): nothing is sent. */
  signal?: AbortSignal;
}

export class ProviderClient {
  /** The provider's origin (scheme, host, port): logged at start-up, never a secret. */
  readonly origin: string;
  private readonly pathPrefix: string;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  /** Calls pass it before they may use the dispatcher: `maxConnections` permits. */
  private readonly gate: ConnectionGate;
  private readonly headersMs: number;
  private readonly bodyMs: number;
  private readonly secretKey: string;
  private readonly accessToken: string;
  private readonly merchantRef: string;
  private readonly categoriesBearer: boolean;
  private readonly observers = new Set<ProviderCallObserver>();
  /** Observers that also get a slow notice, and after how long. */
  private readonly slowObservers = new Map<ProviderCallObserver, number>();

  constructor(cfg: ProviderClientConfig) {
    let url: URL;
    try {
      url = new URL(cfg.baseUrl);
    } catch {
      throw new ConfigError('provider base URL is not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new ConfigError('provider base URL must be http or https');
    }
    if (url.username || url.password) throw new ConfigError('provider base URL must not carry credentials');
    if (url.search || url.hash) throw new ConfigError('provider base URL must not have a query or fragment');
    if (!isLoopbackUrl(cfg.baseUrl) && cfg.live !== true) {
      throw new ConfigError(
        `provider base URL host ${url.hostname} is not a loopback address; set live: true (MPS_LIVE=1) to dial the live provider (every call moves real money)`,
      );
    }
    for (const [name, value] of [
      ['secretKey', cfg.secretKey],
      ['accessToken', cfg.accessToken],
      ['merchantRef', cfg.merchantRef],
    ] as const) {
      if (typeof value !== 'string' || value.trim() === '') throw new ConfigError(`provider ${name} must not be empty`);
    }
    this.origin = url.origin;
    this.pathPrefix = url.pathname.replace(/\/+$/, '');
    this.secretKey = cfg.secretKey;
    this.accessToken = cfg.accessToken;
    this.merchantRef = cfg.merchantRef;
    this.categoriesBearer = cfg.categoriesBearer ?? ASSUMPTIONS.categoriesSendBearerDefault;
    this.headersMs = cfg.timeouts?.headersMs ?? DEFAULT_TIMEOUTS.headersMs;
    this.bodyMs = cfg.timeouts?.bodyMs ?? DEFAULT_TIMEOUTS.bodyMs;
    const connections = cfg.maxConnections ?? ASSUMPTIONS.maxConnectionsPerOrigin;
    if (!Number.isInteger(connections) || connections < 1) throw new ConfigError('provider maxConnections must be a whole number of at least 1');
    this.gate = new ConnectionGate(connections);
    if (cfg.dispatcher) {
      this.dispatcher = cfg.dispatcher;
      this.ownsDispatcher = false;
    } else {
      this.dispatcher = new Pool(this.origin, {
        // One more than the gate has permits, so a call past the gate finds a connection at once
        // even while undici still closes one that failed (a timeout, a reset): the calls in
        // flight stay bounded by the gate.
        connections: connections + 1,
        pipelining: 1,
        connect: { timeout: cfg.timeouts?.connectMs ?? DEFAULT_TIMEOUTS.connectMs },
        headersTimeout: this.headersMs,
        bodyTimeout: this.bodyMs,
        maxResponseSize: MAX_RESPONSE_BYTES,
      });
      this.ownsDispatcher = true;
    }
  }

  /** The full URL of an endpoint: base URL (its own path prefix kept) + PROVIDER_PATHS. */
  urlOf(endpoint: ProviderEndpoint): string {
    return `${this.origin}${this.pathOf(endpoint)}`;
  }

  /** Step 1 of a swap; same standard authentication headers as the confirmation (Bearer secret key). */
  async initSwap(req: SwapInitRequest, send: SendOptions = {}): Promise<SwapInitData> {
    const body = toProviderSwapInitBody(this.validate('swapInit', SwapInitRequest, req));
    const { data } = await this.exchange('swapInit', 'POST', this.secretKeyHeaders(), body, SwapInitData, [], send);
    return data as SwapInitData;
  }

  /** Step 2 of a swap: auth_token from step 1 and the user's PIN. */
  async confirmSwap(req: SwapConfirmRequest, send: SendOptions = {}): Promise<SwapConfirmResult> {
    const valid = this.validate('swapConfirm', SwapConfirmRequest, req);
    const body = { user_ref: valid.user_ref, auth_token: valid.auth_token, wallet_pin: valid.wallet_pin };
    const { envelope } = await this.exchange('swapConfirm', 'POST', this.secretKeyHeaders(), body, undefined, [
      req.auth_token,
      req.wallet_pin,
      valid.wallet_pin,
    ], send);
    return { status: envelope.status, message: envelope.message };
  }

  /** Hosted bank-transfer payment link: Bearer access token and x-merchant-ref. */
  async createHostedLink(req: HostedLinkRequest, send: SendOptions = {}): Promise<HostedLinkData> {
    const body = this.validate('hostedLink', HostedLinkRequest, req);
    const headers = {
      authorization: `Bearer ${this.accessToken}`,
      'x-merchant-ref': this.merchantRef,
      'content-type': 'application/json',
    };
    const { data } = await this.exchange('hostedLink', 'POST', headers, body, HostedLinkData, [], send);
    return data as HostedLinkData;
  }

  /** The flat category list (data.data). x-merchant-ref only, unless categoriesBearer. */
  async listCategories(send: SendOptions = {}): Promise<Category[]> {
    const headers: Record<string, string> = { 'x-merchant-ref': this.merchantRef };
    if (this.categoriesBearer) headers.authorization = `Bearer ${this.accessToken}`;
    const { data } = await this.exchange('categories', 'GET', headers, undefined, CategoriesData, [], send);
    return (data as z.infer<typeof CategoriesData>).data;
  }

  /**
   * Calls `observer` after every exchange (logs, metrics); adding the same function twice is a
   * no-op. With `slowMs`, it is also told (phase 'slow') of a call still unanswered after that long.
   */
  observe(observer: ProviderCallObserver, opts: { slowMs?: number } = {}): void {
    this.observers.add(observer);
    if (opts.slowMs !== undefined && opts.slowMs > 0) this.slowObservers.set(observer, opts.slowMs);
  }

  /** Closes the client's own Pool (an injected dispatcher belongs to its creator). */
  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  private pathOf(endpoint: ProviderEndpoint): string {
    return `${this.pathPrefix}${PROVIDER_PATHS[endpoint]}`;
  }

  private secretKeyHeaders(): Record<string, string> {
    return { authorization: `Bearer ${this.secretKey}`, 'content-type': 'application/json' };
  }

  /** Checks our own request against the contract; a bad one is never sent. Messages name fields only. */
  private validate<S extends z.ZodType>(endpoint: ProviderEndpoint, schema: S, req: unknown): z.output<S> {
    const parsed = schema.safeParse(req);
    if (!parsed.success) {
      throw new ProviderRequestInvalidError(
        `provider ${endpoint}: request not sent, it fails the contract (${describeZodError(parsed.error)})`,
        { endpoint },
      );
    }
    return parsed.data;
  }

  private async exchange<T>(
    endpoint: ProviderEndpoint,
    method: HttpMethod,
    headers: Record<string, string>,
    body: unknown,
    dataSchema: z.ZodType<T> | undefined,
    extraSecrets: readonly (string | undefined)[],
    sending: SendOptions,
  ) {
    const ctx: ExchangeContext = {
      endpoint,
      method,
      secrets: [this.secretKey, this.accessToken, ...extraSecrets],
    };
    const arrived = performance.now();
    const release = await this.gate.acquire(sending.signal);
    try {
      // The connection is ours: asked now, the caller's admission decides what is sent now. A
      // refusal is not a call (no observer is told): nothing left this process.
      await sending.admit?.();
      const started = performance.now();
      const queuedMs = Math.round(started - arrived);
      let wire: WireResponse | undefined;
      const slow = this.watchSlow(ctx, started);
      try {
        wire = await this.send(ctx, headers, body);
        const result = interpretResponse(ctx, wire, dataSchema);
        slow.stop();
        this.notify(ctx, started, wire, undefined, slow.noticed, queuedMs);
        return result;
      } catch (err) {
        slow.stop();
        this.notify(ctx, started, wire, err, slow.noticed, queuedMs);
        throw err;
      }
    } finally {
      // The answer is read to its end, or the exchange failed: the connection is free again (or,
      // when it failed, being closed; the Pool's spare connection stands in meanwhile).
      release();
    }
  }

  /** One timer per slow-notice delay: each observer that asked is told once if the call is still out. */
  private watchSlow(ctx: ExchangeContext, started: number): { stop(): void; readonly noticed: boolean } {
    const timers: NodeJS.Timeout[] = [];
    const state = { noticed: false };
    for (const [observer, ms] of this.slowObservers) {
      timers.push(
        setTimeout(() => {
          state.noticed = true;
          const call: ProviderCall = { endpoint: ctx.endpoint, method: ctx.method, latencyMs: Math.round((performance.now() - started) * 10) / 10, phase: 'slow' };
          try {
            observer(call);
          } catch {
            // an observer never changes the call's outcome
          }
        }, ms).unref(),
      );
    }
    return {
      stop: () => timers.forEach(clearTimeout),
      get noticed() {
        return state.noticed;
      },
    };
  }

  private notify(ctx: ExchangeContext, started: number, wire: WireResponse | undefined, err: unknown, slow: boolean, queuedMs: number): void {
    if (this.observers.size === 0) return;
    const e = err as { kind?: unknown } | undefined;
    const providerRequestId = wire ? requestIdOf(wire.headers) : undefined;
    const call: ProviderCall = {
      endpoint: ctx.endpoint,
      method: ctx.method,
      latencyMs: Math.round((performance.now() - started) * 10) / 10,
      ...(wire ? { status: wire.status } : {}),
      ...(err !== undefined ? { errorKind: typeof e?.kind === 'string' ? e.kind : 'unexpected' } : {}),
      ...(providerRequestId ? { providerRequestId } : {}),
      ...(slow ? { slow: true } : {}),
      ...(queuedMs > 0 ? { queuedMs } : {}),
    };
    for (const observer of this.observers) {
      try {
        observer(call);
      } catch {
        // an observer never changes the call's outcome
      }
    }
  }

  /** One HTTP exchange; network failures are classified here, HTTP answers by interpretResponse. */
  private async send(ctx: ExchangeContext, headers: Record<string, string>, body: unknown): Promise<WireResponse> {
    let res: Dispatcher.ResponseData;
    try {
      res = await this.dispatcher.request({
        origin: this.origin,
        path: this.pathOf(ctx.endpoint),
        method: ctx.method,
        headers: { accept: 'application/json', 'user-agent': USER_AGENT, ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: this.headersMs,
        bodyTimeout: this.bodyMs,
      });
    } catch (err) {
      throw classifyNetworkError(ctx, err);
    }
    const wire: WireResponse = { status: res.statusCode, headers: res.headers };
    try {
      wire.text = await readBounded(res.body, res.headers['content-length'], MAX_RESPONSE_BYTES);
    } catch (err) {
      wire.bodyError = err;
    }
    return wire;
  }
}

class ResponseTooLargeError extends Error {
  readonly code = 'MPF_RESPONSE_TOO_LARGE';
}

/**
 * The body as text, never more than `maxBytes`. A declared Content-Length within the bound is read
 * in one go (undici fails a body that does not match its Content-Length); a larger one is refused
 * unread; a body without one (chunked) is counted chunk by chunk.
 */
async function readBounded(body: Dispatcher.ResponseData['body'], contentLength: string | string[] | undefined, maxBytes: number): Promise<string> {
  const declared = typeof contentLength === 'string' && /^\d{1,15}$/.test(contentLength) ? Number(contentLength) : undefined;
  if (declared !== undefined) {
    if (declared > maxBytes) {
      body.destroy();
      throw new ResponseTooLargeError(`response body larger than ${maxBytes} bytes`);
    }
    return body.text();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    total += buf.length;
    if (total > maxBytes) {
      body.destroy();
      throw new ResponseTooLargeError(`response body larger than ${maxBytes} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The client configured from MPS_* variables. `baseUrl` is passed in because the embedded
 * simulator's address only the caller knows. Every credential is required unless the caller
 * passes `fallback` credentials (only the embedded simulator's caller does; this module never
 * loads the simulator).
 */
export function providerClientFromEnv(
  env: AppEnv,
  baseUrl: string,
  dispatcher?: Dispatcher,
  fallback?: { secretKey: string; accessToken: string; merchantRef: string },
): ProviderClient {
  const pick = (name: 'MPS_SECRET_KEY' | 'MPS_ACCESS_TOKEN' | 'MPS_MERCHANT_REF', fb: string | undefined): string => {
    const v = env[name];
    if (v !== undefined) return v;
    if (fb !== undefined) return fb;
    throw new ConfigError(`${name}: is required when MPS_BASE_URL is set (or ${name}_FILE)`);
  };
  return new ProviderClient({
    baseUrl,
    secretKey: pick('MPS_SECRET_KEY', fallback?.secretKey),
    accessToken: pick('MPS_ACCESS_TOKEN', fallback?.accessToken),
    merchantRef: pick('MPS_MERCHANT_REF', fallback?.merchantRef),
    live: env.MPS_LIVE,
    categoriesBearer: env.MPS_CATEGORIES_BEARER,
    dispatcher,
  });
}
