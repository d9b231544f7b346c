/**
 * A small typed HTTP client for services that talk only to the gateway (no Temporal access, no
 * payload keys): openapi-fetch over the types openapi-typescript generated from the gateway's
 * OpenAPI document (gateway-api.ts; `npm run openapi` regenerates it). Every path, parameter,
 * body and answer is typed by the document:
 *
 *   const gw = createGatewayClient({ baseUrl: 'https://payments.internal', apiKey });
 *   const { data, error, response } = await gw.POST('/v1/swaps', { body: { user_ref, from_currency: 'USD', … } });
 *
 * Uses the platform's fetch (Node 20+). Import it as `merchant-payment-flows/http`.
 */
import createClient from 'openapi-fetch';
import type { components, operations, paths } from './gateway-api';

export type { components, operations, paths };
export type GatewayClient = ReturnType<typeof createClient<paths>>;

export type SwapStartRequest = components['schemas']['SwapStartRequest'];
export type PaymentLinkCreateRequest = components['schemas']['PaymentLinkCreateRequest'];
export type StartedSwap = components['schemas']['StartedSwap'];
export type SwapView = components['schemas']['SwapView'];
export type LinkView = components['schemas']['LinkView'];
export type PinOutcome = components['schemas']['PinOutcome'];
export type GatewayError = components['schemas']['Error'];

export interface GatewayClientOptions {
  /** The gateway's base URL, e.g. https://payments.internal or http://127.0.0.1:8080. */
  baseUrl: string;
  /** GATEWAY_API_KEY, sent as x-api-key on every request (the PIN routes use the swap's pin_token instead). */
  apiKey?: string;
  /** Another fetch (tests, proxies); default globalThis.fetch. */
  fetch?: (input: Request) => Promise<Response>;
}

export function createGatewayClient(opts: GatewayClientOptions): GatewayClient {
  return createClient<paths>({
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    headers: opts.apiKey ? { 'x-api-key': opts.apiKey } : {},
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
  });
}

/** `Authorization: Bearer <pin_token>` for the PIN routes. */
export function pinTokenHeaders(pinToken: string): { authorization: string } {
  return { authorization: `Bearer ${pinToken}` };
}
