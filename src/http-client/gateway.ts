/**
 * MpfGateway: the gateway's routes as typed methods that answer the success body or throw the
 * error class of the gateway's answer (errors.ts), over the typed client with retries (retry.ts):
 *
 *   const mpf = createMpfClient({ baseUrl: 'https://payments.internal', apiKey });
 *   const started = await mpf.startSwap({ user_ref, from_currency: 'USD', to_currency: 'NGN', amount: 10, txn_ref });
 *   const outcome = await mpf.submitPin(started.swap_id, started.pin_token, walletPin);
 *
 * Each POST carries an Idempotency-Key, the caller's (`{ idempotencyKey }`) or one made for the
 * call; a thrown error carries it (`err.idempotencyKey`), so the same logical call can be made
 * again later without starting anything twice. `mpf.http` is the typed openapi-fetch client
 * underneath (same retries) for whatever has no method here.
 */
import { randomUUID } from 'node:crypto';
import type { components, paths } from './gateway-api';
import { MpfApiError } from './errors';
import { type GatewayClient, type GatewayClientOptions, createGatewayClient } from './client';
import type { RetryOptions } from './retry';

type Schemas = components['schemas'];
export type SwapStartRequest = Schemas['SwapStartRequest'];
export type PaymentLinkCreateRequest = Schemas['PaymentLinkCreateRequest'];
export type StartedSwap = Schemas['StartedSwap'];
export type SwapView = Schemas['SwapView'];
export type LinkView = Schemas['LinkView'];
export type PinOutcome = Schemas['PinOutcome'];
export type FlowPage = Schemas['FlowPage'];
export type FlowListItem = Schemas['FlowListItem'];
export type Categories = Schemas['Categories'];
export type ListQuery = NonNullable<paths['/v1/swaps']['get']['parameters']['query']>;
export type ReconciliationQuery = NonNullable<paths['/v1/admin/reconciliations']['get']['parameters']['query']>;
export type MerchantEventPage = Schemas['MerchantEventPage'];
export type MerchantEventDetail = Schemas['MerchantEventDetail'];
export type EventRedelivery = Schemas['EventRedelivery'];
export type ProviderGuard = Schemas['ProviderGuard'];
export type ResolveRequest = Schemas['Resolve'];
export type EventListQuery = NonNullable<paths['/v1/events']['get']['parameters']['query']>;
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
export type WebhookEndpointCreate = Schemas['WebhookEndpointCreate'];
export type WebhookEndpointUpdate = Schemas['WebhookEndpointUpdate'];
export type WebhookEndpointCreated = Schemas['WebhookEndpointCreated'];
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
export type WebhookEndpointDeleted = Schemas['WebhookEndpointDeleted'];
export type ApiKey = Schemas['ApiKey'];
export type ApiKeyCreate = Schemas['ApiKeyCreate'];
export type ApiKeyWithKey = Schemas['ApiKeyWithKey'];

export interface MpfClientOptions extends Omit<GatewayClientOptions, 'retry'>, RetryOptions {}

/** Per call: the caller's Idempotency-Key (POSTs), and an AbortSignal that ends the call and its retries. */
export interface CallOptions {
  idempotencyKey?: string;
  signal?: AbortSignal;
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

export class MpfGateway {
  /** The typed client underneath, with the same retries, for routes without a method here. */
  readonly http: GatewayClient;

  constructor(opts: MpfClientOptions) {
    const { baseUrl, apiKey, bearerToken, fetch, ...retry } = opts;
    this.http = createGatewayClient({ baseUrl, ...(apiKey ? { apiKey } : {}), ...(bearerToken ? { bearerToken } : {}), ...(fetch ? { fetch } : {}), retry });
  }

  /** POST /v1/swaps: starts swap-<txn_ref> and answers once the provider initialised it (rate, amounts, pin_url, pin_token). */
  startSwap(body: SwapStartRequest, opts: CallOptions = {}): Promise<StartedSwap> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(key, this.http.POST('/v1/swaps', { body, params: { header: { 'idempotency-key': key } }, ...signalOf(opts) }));
  }

  /** GET /v1/swaps/{swap_id}: the swap's current view. */
  getSwap(swapId: string, opts: CallOptions = {}): Promise<SwapView> {
    return this.answer(undefined, this.http.GET('/v1/swaps/{swap_id}', { params: { path: { swap_id: swapId } }, ...signalOf(opts) }));
  }

  /** POST /v1/swaps/{swap_id}/cancel: cancels a swap still awaiting its PIN and answers its final view. */
  cancelSwap(swapId: string, opts: CallOptions & { reason?: string } = {}): Promise<SwapView> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(
      key,
      this.http.POST('/v1/swaps/{swap_id}/cancel', {
        params: { path: { swap_id: swapId }, header: { 'idempotency-key': key } },
        body: opts.reason === undefined ? {} : { reason: opts.reason },
        ...signalOf(opts),
      }),
    );
  }

  /**
   * POST /v1/swaps/{swap_id}/pin with the swap's pin_token (never the API key): the outcome of this
   * PIN (confirmed, pin_rejected with attempts_left, …). A retry of the same PIN is answered, not sent twice.
   */
  submitPin(swapId: string, pinToken: string, walletPin: string, opts: CallOptions = {}): Promise<PinOutcome> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(
      key,
      this.http.POST('/v1/swaps/{swap_id}/pin', {
        params: { path: { swap_id: swapId }, header: { 'idempotency-key': key } },
        headers: { authorization: `Bearer ${pinToken}`, 'x-api-key': null },
        body: { wallet_pin: walletPin },
        ...signalOf(opts),
      }),
    );
  }

  /** POST /v1/payment-links: creates paylink-<txn_merchant_ref> and answers once the provider created it (pay_link). */
  createLink(body: PaymentLinkCreateRequest, opts: CallOptions = {}): Promise<LinkView> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(key, this.http.POST('/v1/payment-links', { body, params: { header: { 'idempotency-key': key } }, ...signalOf(opts) }));
  }

  /** GET /v1/payment-links/{link_id}: the link's current view. */
  getLink(linkId: string, opts: CallOptions = {}): Promise<LinkView> {
    return this.answer(undefined, this.http.GET('/v1/payment-links/{link_id}', { params: { path: { link_id: linkId } }, ...signalOf(opts) }));
  }

  /** POST /v1/payment-links/{link_id}/cancel: cancels a link still awaiting payment and answers its final view. */
  cancelLink(linkId: string, opts: CallOptions & { reason?: string } = {}): Promise<LinkView> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(
      key,
      this.http.POST('/v1/payment-links/{link_id}/cancel', {
        params: { path: { link_id: linkId }, header: { 'idempotency-key': key } },
        body: opts.reason === undefined ? {} : { reason: opts.reason },
        ...signalOf(opts),
      }),
    );
  }

  /** GET /v1/swaps: one page, newest first (state, created_from, created_to, limit, page_token). */
  listSwaps(query: ListQuery = {}, opts: CallOptions = {}): Promise<FlowPage> {
    return this.answer(undefined, this.http.GET('/v1/swaps', { params: { query }, ...signalOf(opts) }));
  }

  /** GET /v1/payment-links: one page, newest first (same filters as listSwaps). */
  listLinks(query: ListQuery = {}, opts: CallOptions = {}): Promise<FlowPage> {
    return this.answer(undefined, this.http.GET('/v1/payment-links', { params: { query }, ...signalOf(opts) }));
  }

  /** GET /v1/admin/reconciliations (operator key): flows waiting in needs_reconciliation, newest first; `kind` narrows it. */
  listReconciliations(query: ReconciliationQuery = {}, opts: CallOptions = {}): Promise<FlowPage> {
    return this.answer(undefined, this.http.GET('/v1/admin/reconciliations', { params: { query }, ...signalOf(opts) }));
  }

  /**
   * POST /v1/admin/flows/{flow_id}/resolve (operator key or a person's token): records what the
   * provider shows for a flow in needs_reconciliation and answers its view, reconciled, with the
   * audit record. A flow in another state throws MpfNotResolvableError (with its view).
   */
  resolveFlow(flowId: string, body: ResolveRequest, opts: CallOptions = {}): Promise<SwapView | LinkView> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(key, this.http.POST('/v1/admin/flows/{flow_id}/resolve', { params: { path: { flow_id: flowId }, header: { 'idempotency-key': key } }, body, ...signalOf(opts) }));
  }

  /** GET /v1/events: one page of merchant events (type, flow_id, created_from, created_to, limit, page_token). */
  listEvents(query: EventListQuery = {}, opts: CallOptions = {}): Promise<MerchantEventPage> {
    return this.answer(undefined, this.http.GET('/v1/events', { params: { query }, ...signalOf(opts) }));
  }

  /** GET /v1/events/{event_id}: the event with its deliveries per endpoint and its redeliveries. */
  getEvent(eventId: string, opts: CallOptions = {}): Promise<MerchantEventDetail> {
    return this.answer(undefined, this.http.GET('/v1/events/{event_id}', { params: { path: { event_id: eventId } }, ...signalOf(opts) }));
  }

  /** POST /v1/events/{event_id}/redeliver: sends the event again (same id) to its flow's endpoints, or (`endpoint`) to that registered endpoint only. */
  redeliverEvent(eventId: string, opts: CallOptions & { endpoint?: string } = {}): Promise<EventRedelivery> {
    const key = opts.idempotencyKey ?? randomUUID();
    const body = opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {};
    return this.answer(key, this.http.POST('/v1/events/{event_id}/redeliver', { params: { path: { event_id: eventId }, header: { 'idempotency-key': key } }, body, ...signalOf(opts) }));
  }

  /** GET /v1/webhook_endpoints (operator): the deployment's webhook endpoints, without secrets. */
  async listWebhookEndpoints(opts: CallOptions = {}): Promise<WebhookEndpoint[]> {
    return (await this.answer(undefined, this.http.GET('/v1/webhook_endpoints', { ...signalOf(opts) }))).items;
  }

  /** POST /v1/webhook_endpoints (operator): a new endpoint; its `secret` is in this answer only. */
  createWebhookEndpoint(body: WebhookEndpointCreate, opts: CallOptions = {}): Promise<WebhookEndpointCreated> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(key, this.http.POST('/v1/webhook_endpoints', { params: { header: { 'idempotency-key': key } }, body, ...signalOf(opts) }));
  }

  /** GET /v1/webhook_endpoints/{endpoint_id} (operator): one endpoint, without its secret. */
  getWebhookEndpoint(id: string, opts: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.answer(undefined, this.http.GET('/v1/webhook_endpoints/{endpoint_id}', { params: { path: { endpoint_id: id } }, ...signalOf(opts) }));
  }

  /** POST /v1/webhook_endpoints/{endpoint_id} (operator): changes its url, enabled_events or description. */
  updateWebhookEndpoint(id: string, body: WebhookEndpointUpdate, opts: CallOptions = {}): Promise<WebhookEndpoint> {
    return this.answer(undefined, this.http.POST('/v1/webhook_endpoints/{endpoint_id}', { params: { path: { endpoint_id: id } }, body, ...signalOf(opts) }));
  }

  /** POST /v1/webhook_endpoints/{endpoint_id}/disable or /enable (operator). */
  setWebhookEndpointEnabled(id: string, enabled: boolean, opts: CallOptions = {}): Promise<WebhookEndpoint> {
    const params = { params: { path: { endpoint_id: id } }, ...signalOf(opts) };
    return this.answer(undefined, enabled ? this.http.POST('/v1/webhook_endpoints/{endpoint_id}/enable', params) : this.http.POST('/v1/webhook_endpoints/{endpoint_id}/disable', params));
  }

  /** DELETE /v1/webhook_endpoints/{endpoint_id} (operator). */
  deleteWebhookEndpoint(id: string, opts: CallOptions = {}): Promise<WebhookEndpointDeleted> {
    return this.answer(undefined, this.http.DELETE('/v1/webhook_endpoints/{endpoint_id}', { params: { path: { endpoint_id: id } }, ...signalOf(opts) }));
  }

  /** POST /v1/webhook_endpoints/{endpoint_id}/roll_secret (operator): a new secret (in this answer only); the previous one signs beside it for expires_in_seconds (default 24 h). */
  rollWebhookEndpointSecret(id: string, body: { expires_in_seconds?: number } = {}, opts: CallOptions = {}): Promise<WebhookEndpointWithSecret> {
    return this.answer(undefined, this.http.POST('/v1/webhook_endpoints/{endpoint_id}/roll_secret', { params: { path: { endpoint_id: id } }, body, ...signalOf(opts) }));
  }

  /** GET /v1/api_keys (operator): the keys made through the API, newest first, never a key or its digest. */
  async listApiKeys(opts: CallOptions = {}): Promise<ApiKey[]> {
    return (await this.answer(undefined, this.http.GET('/v1/api_keys', { ...signalOf(opts) }))).data;
  }

  /**
   * POST /v1/api_keys (operator): a new key of the role; `key` is in this answer only (absent when
   * a retry with the same Idempotency-Key met the key the first request made).
   */
  createApiKey(body: ApiKeyCreate, opts: CallOptions = {}): Promise<ApiKey & { key?: string }> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(key, this.http.POST('/v1/api_keys', { params: { header: { 'idempotency-key': key } }, body, ...signalOf(opts) }));
  }

  /** POST /v1/api_keys/{key_id}/revoke (operator): refused from now on by this gateway, by every gateway within their refresh interval. */
  revokeApiKey(id: string, opts: CallOptions = {}): Promise<ApiKey> {
    return this.answer(undefined, this.http.POST('/v1/api_keys/{key_id}/revoke', { params: { path: { key_id: id } }, ...signalOf(opts) }));
  }

  /** POST /v1/api_keys/{key_id}/rotate (operator): a successor (its `key` in this answer only); the old key works for overlap_seconds (default 24 h). */
  rotateApiKey(id: string, body: { overlap_seconds?: number } = {}, opts: CallOptions = {}): Promise<ApiKey & { key?: string }> {
    const key = opts.idempotencyKey ?? randomUUID();
    return this.answer(key, this.http.POST('/v1/api_keys/{key_id}/rotate', { params: { path: { key_id: id }, header: { 'idempotency-key': key } }, body, ...signalOf(opts) }));
  }

  /** GET /v1/admin/provider (operator key): the pause, each breaker and the last operator actions. */
  providerStatus(opts: CallOptions = {}): Promise<ProviderGuard> {
    return this.answer(undefined, this.http.GET('/v1/admin/provider', { ...signalOf(opts) }));
  }

  /** POST /v1/admin/provider/pause (operator key): stops every money-moving call deployment-wide. */
  pauseProvider(reason: string, opts: CallOptions = {}): Promise<ProviderGuard> {
    return this.answer(undefined, this.http.POST('/v1/admin/provider/pause', { body: { reason }, ...signalOf(opts) }));
  }

  /** POST /v1/admin/provider/resume (operator key): ends the pause. */
  resumeProvider(opts: CallOptions = {}): Promise<ProviderGuard> {
    return this.answer(undefined, this.http.POST('/v1/admin/provider/resume', { ...signalOf(opts) }));
  }

  /** GET /v1/categories: the provider's product categories, flat and as a tree. */
  categories(opts: CallOptions = {}): Promise<Categories> {
    return this.answer(undefined, this.http.GET('/v1/categories', { ...signalOf(opts) }));
  }

  /** The success body, or the typed error of the answer. */
  private async answer<T>(idempotencyKey: string | undefined, call: Promise<Answer<T>>): Promise<T> {
    const { data, error, response } = await call;
    if (response.ok) return data as T;
    throw MpfApiError.from(response, error, idempotencyKey);
  }
}

/** The gateway's routes as typed methods, with retries (see MpfGateway). */
export function createMpfClient(opts: MpfClientOptions): MpfGateway {
  return new MpfGateway(opts);
}

function signalOf(opts: CallOptions): { signal?: AbortSignal } {
  return opts.signal ? { signal: opts.signal } : {};
}
