/**
 * The equal-work control: our two flows as a competent engineer writes them from the provider's
 * API and Temporal's samples, doing the same provider work as ours and nothing else (no search
 * attributes, memo, merchant events, provider guard, limits, idempotency records, PIN budget,
 * reconciliation, metrics sink or workflow logging).
 *
 * - swapEqualWorkflow: init (activity) → the `initialized` update of update-with-start answers →
 *   the PIN by update (wait no longer than the provider's expires_in_seconds) → confirm
 *   (activity) → the update answers → wait, as ours does, up to `notification_wait_seconds` for
 *   the provider's notification by signal → complete.
 * - linkEqualWorkflow: create (activity) → the `created` update answers with pay_link → wait up
 *   to `lifetime_seconds` for a notification by signal that names this link's payment_ref and
 *   says paid or failed → complete.
 *
 * auth_token and PIN cross history only inside payloads the codec encrypts. Deterministic.
 */
import { allHandlersFinished, ApplicationFailure, condition, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import type { HostedLinkRequest, SwapInitRequest } from '../../src/contract/provider';
import { mapNotificationOutcome } from '../../src/contract/notifications';
import { PROVIDER_ACTIVITY_START_TO_CLOSE, providerRetryPolicy } from '../../src/activities/retry-policies';
import type { EqualWorkActivities } from './equal-work-activities';

export interface EqualSwapInput {
  request: SwapInitRequest;
  notification_wait_seconds: number;
}
export interface EqualLinkInput {
  request: HostedLinkRequest;
  lifetime_seconds: number;
}
export interface EqualSwapView {
  state: string;
  payment_ref?: string;
  converted_amount?: number;
  rate_used?: number;
  expires_in_seconds?: number;
}
export interface EqualLinkView {
  state: string;
  payment_ref?: string;
  pay_link?: string;
}

export const equalSwapInitializedUpdate = defineUpdate<EqualSwapView>('equalSwapInitialized');
export const equalPinUpdate = defineUpdate<string, [{ wallet_pin: string }]>('equalPin');
export const equalLinkCreatedUpdate = defineUpdate<EqualLinkView>('equalLinkCreated');
export const equalNotificationSignal = defineSignal<[unknown]>('equalNotification');

const activityOptions = { startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE, scheduleToCloseTimeout: '2 minutes', retry: providerRetryPolicy } as const;
const { equalInitSwap, equalCreateLink } = proxyActivities<EqualWorkActivities>(activityOptions);

export async function swapEqualWorkflow(input: EqualSwapInput): Promise<string> {
  const view: EqualSwapView = { state: 'initializing' };
  let pin: string | undefined;
  let outcome: string | undefined;
  let notified = false;
  setHandler(equalSwapInitializedUpdate, async () => {
    await condition(() => view.state !== 'initializing');
    return view;
  });
  setHandler(
    equalPinUpdate,
    async ({ wallet_pin }) => {
      pin = wallet_pin;
      await condition(() => outcome !== undefined);
      return outcome!;
    },
    {
      validator: (_sub) => {
        if (view.state !== 'awaiting_pin' || pin !== undefined) throw ApplicationFailure.nonRetryable(`the swap is ${view.state}, not awaiting a PIN`);
      },
    },
  );
  setHandler(equalNotificationSignal, () => void (notified = true));

  let init;
  try {
    init = await equalInitSwap(input.request);
  } catch {
    view.state = 'failed';
    return view.state;
  }
  Object.assign(view, { state: 'awaiting_pin', payment_ref: init.payment_ref, converted_amount: init.converted_amount, rate_used: init.rate_used, expires_in_seconds: init.expires_in_seconds });
  const windowMs = init.expires_in_seconds * 1000;
  if (!(await condition(() => pin !== undefined, windowMs))) {
    view.state = 'expired';
  } else {
    view.state = 'confirming';
    const { equalConfirmSwap } = proxyActivities<EqualWorkActivities>({ ...activityOptions, scheduleToCloseTimeout: windowMs });
    try {
      const res = await equalConfirmSwap({ user_ref: input.request.user_ref, auth_token: init.auth_token, wallet_pin: pin! });
      view.state = res.outcome === 'confirmed' ? 'confirmed' : 'failed';
    } catch {
      view.state = 'failed';
    }
    pin = undefined;
    outcome = view.state;
    if (view.state === 'confirmed' && input.notification_wait_seconds > 0) await condition(() => notified, input.notification_wait_seconds * 1000);
  }
  await condition(allHandlersFinished);
  return view.state;
}

export async function linkEqualWorkflow(input: EqualLinkInput): Promise<string> {
  const view: EqualLinkView = { state: 'creating' };
  setHandler(equalLinkCreatedUpdate, async () => {
    await condition(() => view.state !== 'creating');
    return view;
  });
  let paid: 'paid' | 'failed' | undefined;
  setHandler(equalNotificationSignal, (n) => {
    const data = (n as { data?: { payment_ref?: unknown } } | undefined)?.data;
    const said = mapNotificationOutcome(n);
    if (view.payment_ref !== undefined && data?.payment_ref === view.payment_ref && (said === 'paid' || said === 'failed')) paid ??= said;
  });

  try {
    const link = await equalCreateLink(input.request);
    Object.assign(view, { state: 'awaiting_payment', payment_ref: link.payment_ref, pay_link: link.pay_link });
  } catch {
    view.state = 'failed';
    await condition(allHandlersFinished);
    return view.state;
  }
  view.state = (await condition(() => paid !== undefined, input.lifetime_seconds * 1000)) ? paid! : 'expired';
  await condition(allHandlersFinished);
  return view.state;
}
