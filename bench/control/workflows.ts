/**
 * The controls: workflows of our flows' event shape whose activities do nothing, so
 * "our flow ÷ its control" is our own work and nothing the shape itself costs.
 *
 * - swapControlWorkflow: activity → (update-with-start `initialized` waits for it) → wait, with a
 *   timer, for the `pin` update → second activity → the update answers → complete. The same
 *   activity options as the swap (timeouts, retry policy) and the same handler discipline.
 * - linkControlWorkflow: activity → (update-with-start `created` waits for it) → wait, with a timer,
 *   for a signal → complete.
 */
import { allHandlersFinished, condition, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import { PROVIDER_ACTIVITY_START_TO_CLOSE, providerRetryPolicy } from '../../src/activities/retry-policies';
import type * as activities from './activities';

export const controlInitializedUpdate = defineUpdate<string>('controlInitialized');
export const controlPinUpdate = defineUpdate<string, [{ submission_id: string; sealed_pin: string }]>('controlPin');
export const controlPaidSignal = defineSignal<[{ dedup_key: string; payload: unknown }]>('controlPaid');

const { controlInit, controlConfirm, controlCreateLink } = proxyActivities<typeof activities>({
  startToCloseTimeout: PROVIDER_ACTIVITY_START_TO_CLOSE,
  scheduleToCloseTimeout: '2 minutes',
  retry: providerRetryPolicy,
});

export async function swapControlWorkflow(input: unknown): Promise<string> {
  let state = 'initializing';
  let pending: string | undefined;
  let outcome: string | undefined;
  setHandler(controlInitializedUpdate, async () => {
    await condition(() => state !== 'initializing');
    return state;
  });
  setHandler(controlPinUpdate, async (sub) => {
    pending = sub.sealed_pin;
    await condition(() => outcome !== undefined);
    return outcome!;
  });
  await controlInit(input);
  state = 'awaiting_pin';
  if (!(await condition(() => pending !== undefined, '5 minutes'))) return 'expired';
  state = 'confirming';
  outcome = await controlConfirm(pending!);
  state = outcome;
  await condition(allHandlersFinished);
  return state;
}

export async function linkControlWorkflow(input: unknown): Promise<string> {
  let state = 'creating';
  let paid = false;
  setHandler(controlInitializedUpdate, async () => {
    await condition(() => state !== 'creating');
    return state;
  });
  setHandler(controlPaidSignal, () => void (paid = true));
  await controlCreateLink(input);
  state = 'awaiting_payment';
  state = (await condition(() => paid, '1 day')) ? 'paid' : 'expired';
  await condition(allHandlersFinished);
  return state;
}
