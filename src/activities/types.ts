/**
 * Inputs and results of the provider activities. Workflows `import type` from here only, so this
 * file holds types and nothing that runs. No result carries the auth_token or PIN in plaintext:
 * they travel sealed (`sealed:v1:…`, see src/codec/seal.ts).
 */
import type { Category, HostedLinkData, HostedLinkRequest, SwapInitData, SwapInitRequest } from '../contract/provider';
import type { EventSettings, EventSettingsInput } from './event-types';

export type { Category, HostedLinkData, HostedLinkRequest, SwapInitRequest };

/** The swap initialization, auth_token replaced by its sealed form. */
export type SwapInitResult = Omit<SwapInitData, 'auth_token'> & {
  sealed_auth_token: string;
  /** Date.now() in the activity when the provider's answer arrived (start of the expiry window). */
  initialized_at_ms: number;
};

export interface ConfirmSwapInput {
  user_ref: string;
  sealed_auth_token: string;
  sealed_pin: string;
}

/**
 * What a confirmation came to. Definitive provider answers are returned; failures that say
 * nothing about the swap (auth, rate limit, transient, ambiguous) are thrown as ApplicationFailure.
 */
export type ConfirmOutcome =
  | { outcome: 'confirmed'; message: string }
  | { outcome: 'wrong_pin'; message: string }
  | { outcome: 'token_invalid'; message: string }
  /** A RETRIED confirmation was told the token is invalid or used: evidence the earlier attempt confirmed. */
  | { outcome: 'token_used_on_retry'; message: string }
  | { outcome: 'rejected'; message: string };

/** `details[0]` of every ApplicationFailure thrown for a provider error. */
export interface ProviderFailureDetails {
  kind: 'rejected' | 'auth' | 'rate_limited' | 'transient' | 'ambiguous' | 'invalid_request';
  endpoint: 'swapInit' | 'swapConfirm' | 'hostedLink' | 'categories';
  httpStatus?: number;
  requestId?: string;
}

/**
 * What a flow's first provider activity answers besides the provider's data when the flow asked
 * for it (its second argument): the worker's merchant-event settings for the flow, so the flow
 * needs no `eventSettings` local activity of its own (one activation and one marker less per flow).
 * The swap's confirmation answers them too when asked (FRESH_TARGETS_PATCH), so the event of the
 * state it decides needs no `eventTargets` local activity.
 */
export interface WithEventSettings {
  event_settings?: EventSettings;
}

/** The activity functions registered on the worker (names are the activity type names). */
export interface ProviderActivities {
  initSwap(input: SwapInitRequest, events?: EventSettingsInput): Promise<SwapInitResult & WithEventSettings>;
  confirmSwap(input: ConfirmSwapInput, events?: EventSettingsInput): Promise<ConfirmOutcome & WithEventSettings>;
  createPaymentLink(input: HostedLinkRequest, events?: EventSettingsInput): Promise<HostedLinkData & WithEventSettings>;
  listCategories(): Promise<Category[]>;
}
