/**
 * The gateway's HTTP client, for services that talk only to the gateway (no Temporal access, no
 * payload keys). Published twice from these files: as `merchant-payment-flows/http`, and alone as
 * the light package `@merchant-payment-flows/client` (packages/client: openapi-fetch its only
 * dependency), so these files import nothing but openapi-fetch, Node built-ins and each other.
 *
 *   createMpfClient   the routes as typed methods (startSwap, getSwap, submitPin, createLink, …) that
 *                     answer the body or throw one error class per gateway error code, with retries
 *                     that never start a flow twice (Idempotency-Key), timeouts and a deadline
 *   createGatewayClient  the typed openapi-fetch client (`gw.POST('/v1/swaps', …)`), bare unless `retry`
 *   verifyEvent       a merchant event's Standard Webhooks signature checked, the typed event answered
 *
 * Types come from the gateway's OpenAPI document (gateway-api.ts; `npm run openapi` regenerates it).
 */
import type { components } from './gateway-api';

export type { components, operations, paths, webhooks } from './gateway-api';
export { createGatewayClient, pinTokenHeaders, type GatewayClient, type GatewayClientOptions } from './client';
export {
  createMpfClient,
  MpfGateway,
  type ApiKey,
  type ApiKeyCreate,
  type ApiKeyWithKey,
  type CallOptions,
  type Categories,
  type FlowListItem,
  type FlowPage,
  type LinkView,
  type ListQuery,
  type ReconciliationQuery,
  type ResolveRequest,
  type EventListQuery,
  type EventRedelivery,
  type MerchantEventDetail,
  type MerchantEventPage,
  type ProviderGuard,
  type MpfClientOptions,
  type PaymentLinkCreateRequest,
  type PinOutcome,
  type StartedSwap,
  type SwapStartRequest,
  type SwapView,
} from './gateway';
export { retryingFetch, RETRY_DEFAULTS, type RetryInfo, type RetryOptions } from './retry';
export * from './errors';
export {
  verifyEvent,
  type HeadersLike,
  type MerchantEvent,
  type MerchantEventOf,
  type MerchantEventType,
  type PaymentLinkEvent,
  type PaymentLinkEventData,
  type SwapEvent,
  type SwapEventData,
  type VerifyEventOptions,
} from './events';

/** An error answer's body (the gateway's Error schema). */
export type GatewayError = components['schemas']['Error'];
