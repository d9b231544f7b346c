/**
 * How each merchant event type is reached by a real flow: the gateway's routes (start, PIN, cancel,
 * the operator's resolve) and the simulator's own ways (its customer's payment or failure, a
 * short confirmation window, a fault), each scoped to the one flow. A recipe drives the flow to
 * where the event will be emitted; the runner then waits for it in the flow's view.
 */
import { MpfNotResolvableError } from '../../../../http-client';
import { flowId } from '../../../../workflows/flow-ids';
import { DOUBT_WINDOW_SECONDS, LINK_CREATE_DELAY_MS, SHORT_WINDOW_SECONDS } from './catalog';
import type { FlowKind, FlowView, TriggerSession, TriggerSwap, WaitOptions } from './session';

export interface Driven {
  kind: FlowKind;
  flowId: string;
  /** How the wait for the event watches the flow. */
  wait?: WaitOptions;
}

export type Recipe = (s: TriggerSession) => Promise<Driven>;

const swapFlow = (sw: TriggerSwap, wait?: WaitOptions): Driven => ({ kind: 'swap', flowId: sw.view.swap_id, ...(wait ? { wait } : {}) });
const linkFlow = (link: { link_id: string }, wait?: WaitOptions): Driven => ({ kind: 'payment_link', flowId: link.link_id, ...(wait ? { wait } : {}) });

async function awaitingPin(s: TriggerSession): Promise<TriggerSwap> {
  const sw = await s.startSwap();
  if (sw.view.state !== 'awaiting_pin') throw new Error(`${sw.view.swap_id} is ${sw.view.state}, not awaiting_pin: ${sw.view.reason ?? 'no reason given'}`);
  return sw;
}

async function confirmed(s: TriggerSession): Promise<Driven> {
  const sw = await awaitingPin(s);
  const o = await s.sendPin(sw, 'valid');
  if (o.outcome === 'pin_rejected') {
    throw new Error(`the simulator refused its default wallet PIN for ${s.userRef}: it was given another one (PUT /_sim/config defaultPin), which mpf events trigger does not know`);
  }
  s.step(`sent the simulator's wallet PIN: ${o.outcome}`);
  return swapFlow(sw);
}

async function pinRejected(s: TriggerSession): Promise<Driven> {
  const sw = await awaitingPin(s);
  const o = await s.sendPin(sw, 'wrong');
  s.step(`sent a wrong PIN: ${o.outcome}${o.attempts_left !== undefined ? ` (${o.attempts_left} attempts left; the swap waits for another PIN)` : ''}`);
  return swapFlow(sw);
}

async function swapExpired(s: TriggerSession): Promise<Driven> {
  await s.shortWindow(SHORT_WINDOW_SECONDS);
  // On a slow machine the window may close before the start is answered: expired already is fine.
  const sw = await s.startSwap();
  if (sw.view.state !== 'awaiting_pin' && sw.view.state !== 'expired') throw new Error(`${sw.view.swap_id} is ${sw.view.state}: ${sw.view.reason ?? 'no reason given'}`);
  s.step(`no PIN: waiting for its window to close (${sw.view.expires_at ?? 'soon'})`);
  return swapFlow(sw);
}

async function swapFailed(s: TriggerSession): Promise<Driven> {
  await s.scopedFaults([{ endpoint: 'swap.init', kind: 'html_error', status: 400, times: 1 }], 'refuses the initialisation of this swap with an HTTP 400');
  return swapFlow(await s.startSwap());
}

/**
 * The confirmation is in doubt (sent, never answered) and no notification settles it: the swap
 * waits the gateway's SWAP_SETTLE_WAIT_SECONDS, then needs reconciliation. Said early when that
 * wait ends after --timeout.
 */
async function swapInDoubt(s: TriggerSession): Promise<Driven> {
  await s.shortWindow(DOUBT_WINDOW_SECONDS);
  await s.scopedFaults([{ endpoint: 'swap.confirm', kind: 'reset' }], "drops this swap's confirmations without an answer, nothing committed");
  const sw = await awaitingPin(s);
  s.step("sending the simulator's wallet PIN (its confirmation goes unanswered; the swap retries it inside its window)");
  s.sendPin(sw, 'valid').then(
    (o) => s.step(`the PIN's outcome: ${o.outcome}`),
    (err: unknown) => {
      if (!s.stop.signal.aborted) s.step(`the PIN was not taken: ${(err as Error).message}`);
    },
  );
  return swapFlow(sw, { check: settleWaitCheck(s, sw.view.swap_id), hint: "the swap waits the gateway's SWAP_SETTLE_WAIT_SECONDS for the provider's notification first" });
}

function settleWaitCheck(s: TriggerSession, swapId: string): (view: FlowView) => void {
  let seen = false;
  return (view) => {
    const m = /waiting up to (\d+) s for the provider's notification/.exec(view.reason ?? '');
    if (seen || view.state !== 'confirming' || !m) return;
    seen = true;
    const seconds = Number(m[1]);
    s.step(`the confirmation is in doubt: the gateway's swap waits ${seconds} s (SWAP_SETTLE_WAIT_SECONDS) for a notification that will not come`);
    if (Date.now() + seconds * 1000 > s.deadline) {
      throw new Error(
        `${swapId} waits ${seconds} s (the gateway's SWAP_SETTLE_WAIT_SECONDS) before swap.needs_reconciliation, past --timeout: ` +
          'run the gateway with a short SWAP_SETTLE_WAIT_SECONDS (e.g. 5) or raise --timeout; the swap goes on and emits it by itself',
      );
    }
  };
}

async function linkExpired(s: TriggerSession): Promise<Driven> {
  const link = await s.createLink();
  const expiresMs = Date.parse(link.expires_at ?? '');
  if (Number.isFinite(expiresMs) && expiresMs >= s.deadline) {
    throw new Error(
      `${link.link_id} expires at ${link.expires_at} (the gateway's LINK_LIFETIME_SECONDS), past --timeout: run the gateway with a short ` +
        'LINK_LIFETIME_SECONDS (e.g. 20) or raise --timeout; the link is left to expire then, and emits payment_link.expired by itself',
    );
  }
  s.step(`no payment: waiting for its lifetime to end (${link.expires_at ?? 'LINK_LIFETIME_SECONDS'})`);
  return linkFlow(link);
}

const LATE_PAYMENT_HINT =
  "a payment after the cancel is kept while the link still listens, for the gateway's LINK_LATE_NOTIFICATION_GRACE_SECONDS (0 in `mpf demo`): give the gateway a longer one";

async function paidAfterCancel(s: TriggerSession): Promise<Driven> {
  const link = await s.createLink();
  await s.cancelLink(link.link_id);
  await s.settleLink(link, 'paid');
  return linkFlow(link, { hint: LATE_PAYMENT_HINT });
}

/**
 * needs_reconciliation, then an operator's resolution through the gateway's operator route: what
 * the simulator's ledger shows for the flow (converted or paid, or not) is the outcome recorded.
 */
function reconciled(reach: Recipe): Recipe {
  return async (s) => {
    await s.requireOperator();
    const d = await reach(s);
    const stuck = `${d.kind}.needs_reconciliation`;
    const { event, view } = await s.waitForEvent(d.kind, d.flowId, stuck, d.wait);
    s.step(`${stuck} emitted (${event.id})`);
    const { effects } = await s.sim.ledger({ ref: s.ref });
    const moved = effects.some((e) => e.kind === (d.kind === 'swap' ? 'swap.confirmed' : 'link.paid'));
    const outcome = d.kind === 'swap' ? (moved ? 'confirmed' : 'failed') : moved ? 'paid' : 'failed';
    const note = `the simulator's ledger shows ${moved ? 'the money moved' : 'no money moved'}`;
    await s.resolve(d.flowId, outcome, view.payment_ref ?? d.flowId, note).catch((err: unknown) => {
      // 409 not_resolvable with no reconciliation in the link's view: it closed before an operator could resolve it.
      const refused = (err as Error).cause;
      const closed = d.kind === 'payment_link' && refused instanceof MpfNotResolvableError && !refused.link?.reconciliation;
      throw closed ? new Error(`${(err as Error).message}; ${LATE_PAYMENT_HINT}`, { cause: err }) : err;
    });
    return { kind: d.kind, flowId: d.flowId };
  };
}

/** A swap awaiting its PIN, terminated in Temporal: nothing was sent, it ends `terminated`. */
async function swapTerminated(s: TriggerSession): Promise<Driven> {
  const sw = await awaitingPin(s);
  await s.terminateInTemporal(sw.view.swap_id);
  return swapFlow(sw, { hint: "the workers carry a terminated flow on within CLOSED_FLOW_SWEEP_SECONDS (10 s by default): is a worker running?" });
}

/** A link terminated while the provider creates it (a slow creation, scoped): the customer never got pay_link. */
async function linkTerminated(s: TriggerSession): Promise<Driven> {
  await s.scopedFaults([{ endpoint: 'link.create', kind: 'latency', latencyMs: [LINK_CREATE_DELAY_MS, LINK_CREATE_DELAY_MS] }], `creates ${s.ref}'s link slowly`);
  const creating = s.createLink().then(
    () => undefined,
    (err: unknown) => err,
  );
  const linkId = flowId('payment_link', s.ref);
  await s.waitForState('payment_link', linkId, 'creating');
  await s.terminateInTemporal(linkId);
  const refused = await creating;
  if (refused) s.step(`the gateway answered the creation: ${(refused as Error).message}`);
  return linkFlow({ link_id: linkId }, { hint: "the workers carry a terminated flow on within CLOSED_FLOW_SWEEP_SECONDS (10 s by default): is a worker running?" });
}

export const RECIPES: Readonly<Record<string, Recipe>> = {
  'swap.awaiting_pin': async (s) => swapFlow(await awaitingPin(s)),
  'swap.confirmed': confirmed,
  'swap.pin_rejected': pinRejected,
  'swap.cancelled': async (s) => {
    const sw = await awaitingPin(s);
    await s.cancelSwap(sw.view.swap_id);
    return swapFlow(sw);
  },
  'swap.expired': swapExpired,
  'swap.failed': swapFailed,
  'swap.needs_reconciliation': swapInDoubt,
  'swap.reconciled': reconciled(swapInDoubt),
  'payment_link.created': async (s) => linkFlow(await s.createLink()),
  'payment_link.paid': async (s) => {
    const link = await s.createLink();
    await s.settleLink(link, 'paid');
    return linkFlow(link);
  },
  'payment_link.failed': async (s) => {
    const link = await s.createLink();
    await s.settleLink(link, 'failed');
    return linkFlow(link);
  },
  'payment_link.cancelled': async (s) => {
    const link = await s.createLink();
    await s.cancelLink(link.link_id);
    return linkFlow(link);
  },
  'payment_link.expired': linkExpired,
  'payment_link.needs_reconciliation': paidAfterCancel,
  'payment_link.reconciled': reconciled(paidAfterCancel),
  'swap.terminated': swapTerminated,
  'payment_link.terminated': linkTerminated,
};
