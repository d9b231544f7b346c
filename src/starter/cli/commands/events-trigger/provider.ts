/**
 * The provider guard's events (provider.*) from `mpf events trigger`: a pause and its resume
 * through the operator route, or the confirm breaker opened by a real swap whose confirmations the
 * simulator answers 503 (a fault scoped to that swap), then closed once the fault is gone: after
 * its probe (the categories GET) a half-open breaker lets one real confirmation through as its
 * trial, and a second swap of the session, its PIN sent while the breaker is open, is that trial.
 * Needs an operator key; the deployment is left as found (resumed, faults removed).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ProviderGuard } from '../../../../http-client';
import type { TriggerSession } from './session';

export interface GuardEventSeen {
  event: { id: string; type: string; timestamp: string };
  /** The guard's workflow id (the events' "flow"). */
  guardId: string;
  state: string;
}

const POLL_MS = 500;

/** Waits until the guard lists an event of `type` that happened at or after `since`. */
async function waitForGuardEvent(s: TriggerSession, type: string, since: number, hint: string): Promise<GuardEventSeen> {
  for (;;) {
    const g = await s.call<ProviderGuard>(s.gw.providerStatus({ signal: s.stop.signal }), 'GET /v1/admin/provider (the operator route)', 'operator');
    const event = g.events?.find((e) => e.type === type && Date.parse(e.timestamp) >= since);
    if (event) {
      const guardId = /^evt_(.+)_\d+$/.exec(event.id)?.[1] ?? 'provider-guard';
      const state = type.startsWith('provider.breaker') ? g.breakers.confirm.state : g.paused ? 'paused' : 'resumed';
      return { event, guardId, state };
    }
    if (Date.now() >= s.deadline) throw new Error(`timed out waiting for ${type} from the provider guard; ${hint}; --timeout sets the wait`);
    await sleep(Math.min(POLL_MS, Math.max(0, s.deadline - Date.now())), undefined, { signal: s.stop.signal });
  }
}

async function pauseAndResume(s: TriggerSession, type: string): Promise<GuardEventSeen> {
  const since = Date.now() - 1_000;
  await s.call(s.gw.providerStatus({ signal: s.stop.signal }), 'GET /v1/admin/provider (the operator route)', 'operator');
  try {
    await s.call(s.gw.pauseProvider(`mpf events trigger ${type}`, { signal: s.stop.signal }), 'POST /v1/admin/provider/pause', 'operator');
    s.step('paused money-moving calls (the operator route)');
  } finally {
    await s.gw.resumeProvider().then(
      () => s.step('resumed them'),
      (err: unknown) => s.step(`could not resume: ${(err as Error).message} — run mpf provider resume`),
    );
  }
  return waitForGuardEvent(s, type, since, 'is a worker running the provider guard?');
}

const CLOSE_HINT = 'the breaker probes after PROVIDER_BREAKER_COOLDOWN_SECONDS (30 s by default), then lets one confirmation through as its trial: raise --timeout';

/** A second swap whose confirmation waits, held, to be the half-open breaker's trial; then the closing. */
async function closeByTrial(s: TriggerSession, since: number, suffix: string): Promise<GuardEventSeen> {
  const trial = await s.startSwap(suffix);
  s.step(`sending the PIN of ${trial.view.swap_id}: its confirmation is held until the breaker's probe succeeds, then is its trial call`);
  s.sendPin(trial, 'valid').catch(() => undefined);
  return waitForGuardEvent(s, 'provider.breaker_closed', since, CLOSE_HINT);
}

async function confirmBreaker(s: TriggerSession, type: string): Promise<GuardEventSeen> {
  const since = Date.now() - 1_000;
  const g = await s.call<ProviderGuard>(s.gw.providerStatus({ signal: s.stop.signal }), 'GET /v1/admin/provider (the operator route)', 'operator');
  if (g.breakers.confirm.state !== 'closed') {
    // Opened by other traffic (another trigger, an incident): its closing is the event too; an opening needs it closed first.
    s.step(`the confirm breaker is ${g.breakers.confirm.state} already: waiting for its probe and trial to close it`);
    const closed = await closeByTrial(s, since, 'trial-0');
    if (type === 'provider.breaker_closed') return closed;
  }
  await s.scopedFaults([{ endpoint: 'swap.confirm', kind: 'status5xx', status: 503 }], "answers this swap's confirmations 503 (nothing committed): each one an ambiguous outcome");
  const sw = await s.startSwap();
  if (sw.view.state !== 'awaiting_pin') throw new Error(`${sw.view.swap_id} is ${sw.view.state}: ${sw.view.reason ?? 'no reason given'}`);
  s.step("sending the simulator's wallet PIN: its confirmations fail until the confirm breaker opens");
  s.sendPin(sw, 'valid').catch(() => undefined);
  const opened = await waitForGuardEvent(s, 'provider.breaker_opened', since, 'the breaker opens after PROVIDER_BREAKER_AMBIGUOUS_COUNT ambiguous confirmations');
  s.step(`provider.breaker_opened emitted (${opened.event.id}); removing the fault, so the breaker's probe and its trial succeed`);
  await s.sim.clearRefFaults(s.ref);
  if (type === 'provider.breaker_opened') return opened;
  return closeByTrial(s, since, 'trial');
}

export function runProviderRecipe(s: TriggerSession, type: string): Promise<GuardEventSeen> {
  return type === 'provider.paused' || type === 'provider.resumed' ? pauseAndResume(s, type) : confirmBreaker(s, type);
}
