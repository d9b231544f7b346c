/**
 * What the tests send, defined once: unique references, the request bodies of our API (the
 * gateway's and the typed client's), the provider's own request bodies (what the worker sends the
 * simulator) built from them, and the wallet PIN of a simulator user with no PIN configured.
 * `extra` may break a body on purpose (validation tests); the provider bodies are then typed as if valid.
 */
import { SIMULATOR_DEFAULT_PIN } from '../../src/simulator/options';
import type { HostedLinkRequest, SwapInitRequest } from '../../src/contract/provider';
import type { LinkCreateRequest, SwapStartRequest } from '../../src/starter/client/mpf-client';

/** A reference no other call has used (references become workflow ids: letters, digits, `.`, `_`, `:`, `-`). */
export const uniqueRef = (prefix: string): string => `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 7)}`;

/** The wallet PIN of a user the simulator has no PIN configured for (its `defaultPin`). */
export const SIM_PIN = SIMULATOR_DEFAULT_PIN;

/** A swap start body (POST /v1/swaps, MpfClient.startSwap): user-1, 10.5 USD to NGN, with `extra` on top. */
export const swapBody = (txn_ref: string, extra: Record<string, unknown> = {}): SwapStartRequest =>
  ({
  user_ref: 'user-1',
  from_currency: 'USD',
  to_currency: 'NGN',
  amount: 10.5,
  txn_ref,
  ...extra,
  }) as SwapStartRequest;

/** A payment-link body (POST /v1/payment-links, MpfClient.createLink): 25,000 NGN from Ada Obi, with `extra` on top. */
export const linkBody = (txn_merchant_ref: string, extra: Record<string, unknown> = {}): LinkCreateRequest =>
  ({
  user_ref: 'customer-1',
  txn_merchant_ref,
  amount: 25_000,
  full_name: 'Ada Obi',
  email: 'ada@example.com',
  phone: '+2348012345678',
  redirect_url: 'http://127.0.0.1:9/thanks',
  ...extra,
  }) as LinkCreateRequest;

/** The provider's swap initialization body (what the worker sends): swapBody plus a notification_url. */
export const providerSwapBody = (txn_ref: string, extra: Record<string, unknown> = {}): SwapInitRequest =>
  swapBody(txn_ref, { notification_url: 'http://127.0.0.1:9/unused', ...extra }) as unknown as SwapInitRequest;

/** The provider's hosted-link body (what the worker sends): linkBody with every field the provider takes. */
export const providerLinkBody = (txn_merchant_ref: string, extra: Record<string, unknown> = {}): HostedLinkRequest =>
  linkBody(txn_merchant_ref, {
    currency: 'NGN',
    chain: '',
    success_message: 'Thanks!',
    payment_method: 'HOSTED_PAY_LINK',
    payment_channel: 'BANK_TRANSFER',
    notification_url: 'http://127.0.0.1:9/notify',
    ...extra,
  }) as HostedLinkRequest;
