/**
 * One flow of each kind, timed in its two phases, for the load curve:
 *
 *   swap (ours):      MpfClient.startSwap (update-with-start → awaiting_pin)  |  submitPin (update → confirmed)
 *   swap (control):   update-with-start `controlInitialized` (no-op activity) |  update `controlPin` (no-op activity)
 *   link (ours):      MpfClient.createLink (update-with-start → awaiting_payment) | the simulator's checkout pays it →
 *                     its notification → the gateway's receiver → signal → the workflow completes `paid`
 *   link (control):   update-with-start `controlInitialized` (no-op activity) | a signal → the workflow completes
 *   swap (equal):     EqualWorkClient.startSwap (update-with-start, the provider's init) | its PIN update (the
 *                     provider's confirm → confirmed); the workflow then takes the provider's notification by signal
 *   link (equal):     EqualWorkClient.createLink (update-with-start, the provider's link) | the checkout pays it → its
 *                     notification → the equal-work receiver → signal → the workflow completes `paid`
 *
 * Phase 1 is "start → waiting" (awaiting_pin / awaiting_payment), phase 2 "PIN → outcome" /
 * "payment → completed". Every flow checks its answer, so a benchmark can never time failures.
 */
import { randomUUID } from 'node:crypto';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { linkBody, SIM_PIN, swapBody } from '../test/helpers/fixtures';
import { controlInitializedUpdate, controlPaidSignal, controlPinUpdate } from './control/workflows';
import type { BenchStack } from './stack';
import { msSince, now } from './stats';

export type Family = 'swap' | 'link';
/** Ours, the control of the same shape (no-op activities), the equal-work control (bench/control/equal-work-*). */
export type Side = 'ours' | 'control' | 'equal';

export interface FlowTiming {
  /** start → awaiting_pin / awaiting_payment (ms). */
  toWaiting: number;
  /** PIN → outcome / payment → completed (ms). */
  toOutcome: number;
  /** The flow's workflow id (for its history counts). */
  workflowId: string;
}

export type FlowRunner = () => Promise<FlowTiming>;

// A memo of the size of ours (two SHA-256 hex digests) and a sealed-PIN-sized string for the control.
const CONTROL_MEMO = { pin_token_sha256: 'a'.repeat(64), notify_token_sha256: 'b'.repeat(64) };
const CONTROL_SEALED_PIN = `sealed:v1:${'x'.repeat(86)}`;

export function flowRunner(stack: BenchStack, family: Family, side: Side): FlowRunner {
  const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  let seq = 0;
  const ref = (): string => `bench-${run}-${seq++}`;

  const controlStart = async (workflowType: string, body: unknown): Promise<string> => {
    const workflowId = `${family}ctl-${ref()}`;
    const op = new WithStartWorkflowOperation(workflowType, {
      workflowId,
      taskQueue: stack.controlQueue,
      args: [body],
      workflowIdConflictPolicy: 'FAIL',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      memo: CONTROL_MEMO,
    });
    const state = await stack.client.workflow.executeUpdateWithStart(controlInitializedUpdate, { startWorkflowOperation: op });
    if (state !== 'awaiting_pin' && state !== 'awaiting_payment') throw new Error(`control ${workflowId} is ${state}`);
    return workflowId;
  };

  if (side === 'equal') return equalRunner(stack, family, ref);
  if (family === 'swap' && side === 'ours') {
    return async () => {
      const a = now();
      const started = await stack.mpf.startSwap(swapBody(ref()));
      if (started.swap.state !== 'awaiting_pin') throw new Error(`swap ${started.swap.swap_id} is ${started.swap.state}`);
      const toWaiting = msSince(a);
      const b = now();
      const outcome = await stack.mpf.submitPin(started.swap.swap_id, { wallet_pin: SIM_PIN });
      if (outcome?.outcome !== 'confirmed') throw new Error(`swap ${started.swap.swap_id}: PIN outcome ${outcome?.outcome}`);
      return { toWaiting, toOutcome: msSince(b), workflowId: started.swap.swap_id };
    };
  }
  if (family === 'swap') {
    return async () => {
      const a = now();
      const id = await controlStart('swapControlWorkflow', swapBody(ref()));
      const toWaiting = msSince(a);
      const b = now();
      const outcome = await stack.client.workflow
        .getHandle(id)
        .executeUpdate(controlPinUpdate, { args: [{ submission_id: randomUUID(), sealed_pin: CONTROL_SEALED_PIN }] });
      if (outcome !== 'confirmed') throw new Error(`control ${id}: outcome ${outcome}`);
      return { toWaiting, toOutcome: msSince(b), workflowId: id };
    };
  }
  if (side === 'ours') {
    return async () => {
      const a = now();
      const { link } = await stack.mpf.createLink(linkBody(ref()));
      if (link.state !== 'awaiting_payment' || !link.payment_ref) throw new Error(`link ${link.link_id} is ${link.state}`);
      const toWaiting = msSince(a);
      const b = now();
      await stack.control.completeLink(link.payment_ref);
      const end = (await stack.client.workflow.getHandle(link.link_id).result()) as { state: string };
      if (end.state !== 'paid') throw new Error(`link ${link.link_id} ended ${end.state}`);
      return { toWaiting, toOutcome: msSince(b), workflowId: link.link_id };
    };
  }
  return async () => {
    const a = now();
    const id = await controlStart('linkControlWorkflow', linkBody(ref()));
    const toWaiting = msSince(a);
    const b = now();
    const handle = stack.client.workflow.getHandle(id);
    await handle.signal(controlPaidSignal, { dedup_key: `id:${randomUUID()}`, payload: { event: 'payment.completed', status: 'successful' } });
    const end = await handle.result();
    if (end !== 'paid') throw new Error(`control ${id} ended ${String(end)}`);
    return { toWaiting, toOutcome: msSince(b), workflowId: id };
  };
}

/** The equal-work control's flows, timed as ours. */
function equalRunner(stack: BenchStack, family: Family, ref: () => string): FlowRunner {
  if (family === 'swap') {
    return async () => {
      const a = now();
      const { swapId, view } = await stack.equal.startSwap(swapBody(ref()));
      if (view.state !== 'awaiting_pin') throw new Error(`equal-work swap ${swapId} is ${view.state}`);
      const toWaiting = msSince(a);
      const b = now();
      const outcome = await stack.equal.submitPin(swapId, { wallet_pin: SIM_PIN });
      if (outcome !== 'confirmed') throw new Error(`equal-work swap ${swapId}: PIN outcome ${outcome}`);
      return { toWaiting, toOutcome: msSince(b), workflowId: swapId };
    };
  }
  return async () => {
    const a = now();
    const { linkId, view } = await stack.equal.createLink(linkBody(ref()));
    if (view.state !== 'awaiting_payment' || !view.payment_ref || !view.pay_link) throw new Error(`equal-work link ${linkId} is ${view.state}`);
    const toWaiting = msSince(a);
    const b = now();
    await stack.control.completeLink(view.payment_ref);
    const end = await stack.client.workflow.getHandle(linkId).result();
    if (end !== 'paid') throw new Error(`equal-work link ${linkId} ended ${String(end)}`);
    return { toWaiting, toOutcome: msSince(b), workflowId: linkId };
  };
}
