/**
 * The provider activities, built with their dependencies injected (the worker passes the real
 * client and sealer; tests pass their own). The auth_token and PIN cross workflow history only
 * sealed: initSwap seals the token, confirmSwap unseals token and PIN just for the HTTP call.
 * Logs carry references only.
 */
import { Context, log } from '@temporalio/activity';
import { isDuplicateReferenceRejection } from '../contract/provider';
import { type Sealer, unsealUrlLastSegment } from '../codec/seal';
import { classifyConfirmRejection, isProviderError, ProviderRejectedError } from '../provider/errors';
import type { ProviderClient } from '../provider/client';
import { whileHeartbeating } from './heartbeat';
import { guardedSend } from './guard';
import type { ProviderGate } from '../contract/provider-guard';
import { earlierAttemptAppliedFailure, sealedPayloadFailure, toActivityError } from './failures';
import type { EventSettings, EventSettingsInput } from './event-types';
import type { ConfirmOutcome, ConfirmSwapInput, ProviderActivities, SwapInitResult, WithEventSettings } from './types';

export * from './types';
export { providerRetryPolicy, PROVIDER_FAILURE_TYPES, SEALED_PAYLOAD_FAILURE_TYPE, EARLIER_ATTEMPT_APPLIED_TYPE, PROVIDER_ACTIVITY_START_TO_CLOSE } from './retry-policies';
export { providerFailure, toActivityError } from './failures';

export interface ActivityDeps {
  client: ProviderClient;
  sealer: Sealer;
  /**
   * The merchant-event settings of a flow (the `eventSettings` activity's function), answered with
   * the flow's first provider activity when the flow passes its EventSettingsInput.
   */
  eventSettings?: (input: EventSettingsInput) => Promise<EventSettings>;
  /** The deployment's provider guard (kill switch and breakers): asked when a money-moving call has its connection, right before it is sent. */
  guard?: ProviderGate;
}

function logFailure(activity: string, refs: Record<string, unknown>, err: unknown): void {
  if (isProviderError(err)) {
    log.warn(`${activity}: provider call failed`, {
      ...refs,
      failure: err.name,
      endpoint: err.endpoint,
      httpStatus: err.httpStatus,
      requestId: err.requestId,
      networkCode: err.networkCode,
    });
  }
}

/** True on the second and later attempt of this activity (an earlier one may have reached the provider). */
function isRetry(): boolean {
  try {
    return Context.current().info.attempt > 1;
  } catch {
    return false; // called outside an activity (unit tests)
  }
}

/** On a retry, a duplicate-reference rejection is proof the earlier attempt was applied. */
function duplicateOnRetry(err: unknown): err is ProviderRejectedError {
  return err instanceof ProviderRejectedError && isRetry() && isDuplicateReferenceRejection(err.httpStatus, err.providerMessage ?? err.message);
}

export function createActivities(deps: ActivityDeps): ProviderActivities {
  const { client, sealer } = deps;

  /**
   * The flow's event settings, added to its first activity's answer when the flow asked for them
   * (flows scheduled by an older worker did not: they keep their own local activity). Never fails
   * the activity: the provider has acted by now, and a retry would be a second request.
   */
  const withEventSettings = async <T extends object>(result: T, events: EventSettingsInput | undefined): Promise<T & WithEventSettings> => {
    if (!events || !deps.eventSettings) return result;
    try {
      return { ...result, event_settings: await deps.eventSettings(events) };
    } catch (err) {
      log.warn('event settings not handed over with the activity; the flow reads them itself', { error: String(err) });
      return result;
    }
  };

  /** The notification_url's token travels sealed through the workflow (sealUrlLastSegment). */
  const unsealUrl = (url: string): string => {
    try {
      return unsealUrlLastSegment(url, sealer);
    } catch {
      throw sealedPayloadFailure('notification_url');
    }
  };

  const unseal = (field: string, sealed: string): string => {
    try {
      return sealer.unseal(sealed);
    } catch {
      throw sealedPayloadFailure(field);
    }
  };

  return {
    async initSwap(input, events): Promise<SwapInitResult & WithEventSettings> {
      const refs = { txn_ref: input.txn_ref, user_ref: input.user_ref };
      let data;
      try {
        data = await whileHeartbeating(() => client.initSwap({ ...input, notification_url: unsealUrl(input.notification_url) }, guardedSend(deps.guard, 'initiate')));
      } catch (err) {
        logFailure('initSwap', refs, err);
        if (duplicateOnRetry(err)) throw earlierAttemptAppliedFailure('txn_ref', input.txn_ref, err.providerMessage);
        throw toActivityError(err);
      }
      const initialized_at_ms = Date.now();
      const { auth_token, ...rest } = data;
      const result: SwapInitResult = { ...rest, sealed_auth_token: sealer.seal(auth_token), initialized_at_ms };
      log.info('initSwap: swap initialized', {
        ...refs,
        payment_ref: rest.payment_ref,
        expires_in_seconds: rest.expires_in_seconds,
      });
      return withEventSettings(result, events);
    },

    async confirmSwap(input: ConfirmSwapInput, events?: EventSettingsInput): Promise<ConfirmOutcome & WithEventSettings> {
      const refs = { user_ref: input.user_ref };
      const auth_token = unseal('sealed_auth_token', input.sealed_auth_token);
      const wallet_pin = unseal('sealed_pin', input.sealed_pin);
      try {
        const res = await whileHeartbeating(() => client.confirmSwap({ user_ref: input.user_ref, auth_token, wallet_pin }, guardedSend(deps.guard, 'confirm')));
        log.info('confirmSwap: swap confirmed', refs);
        return await withEventSettings({ outcome: 'confirmed' as const, message: res.message }, events);
      } catch (err) {
        if (err instanceof ProviderRejectedError) {
          const kind = classifyConfirmRejection(err);
          // A retried confirmation told "token invalid/used": the earlier attempt most likely confirmed.
          const outcome = kind === 'other' ? 'rejected' : kind === 'token_invalid' && isRetry() ? 'token_used_on_retry' : kind;
          log.info('confirmSwap: confirmation rejected', { ...refs, outcome, httpStatus: err.httpStatus, requestId: err.requestId });
          return await withEventSettings({ outcome, message: err.providerMessage ?? err.message }, events);
        }
        logFailure('confirmSwap', refs, err);
        throw toActivityError(err);
      }
    },

    async createPaymentLink(input, events) {
      const refs = { txn_merchant_ref: input.txn_merchant_ref, user_ref: input.user_ref };
      try {
        const link = await whileHeartbeating(() => client.createHostedLink({ ...input, notification_url: unsealUrl(input.notification_url) }, guardedSend(deps.guard, 'create')));
        log.info('createPaymentLink: link created', { ...refs, payment_ref: link.payment_ref });
        return await withEventSettings(link, events);
      } catch (err) {
        logFailure('createPaymentLink', refs, err);
        if (duplicateOnRetry(err)) throw earlierAttemptAppliedFailure('txn_merchant_ref', input.txn_merchant_ref, err.providerMessage);
        throw toActivityError(err);
      }
    },

    async listCategories() {
      try {
        const list = await whileHeartbeating(() => client.listCategories(guardedSend(deps.guard, undefined)));
        log.debug('listCategories: received', { count: list.length });
        return list;
      } catch (err) {
        logFailure('listCategories', {}, err);
        throw toActivityError(err);
      }
    },
  };
}
